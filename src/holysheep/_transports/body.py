"""What one response may cost in bytes, whatever the server does, enforced while reading.

- `BoundedDecoder` inflates gzip/deflate in pieces of at most 64 KiB, so a compression bomb never
  expands more than one piece beyond what the caller has accepted.
- `BodyReader` collects a non-stream body and raises `ResponseTooLargeError` as soon as the decoded
  size passes ``max_response_bytes``.
- The helpers at the bottom drive them over httpx and aiohttp responses.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from holysheep._core.built_response import decoded_response
from holysheep._exceptions import ResponseTooLargeError
from holysheep._transports.deadlines import Deadline

__all__ = [
    "BodyReader",
    "BoundedDecoder",
    "aiter_decoded",
    "iter_decoded",
    "read_aiohttp_body",
    "read_body",
    "read_body_async",
]

PIECE = 65536  # the most one inflate step may produce


class _Inflater:
    __slots__ = ("_obj", "_raw_deflate", "_started")

    def __init__(self, encoding: str) -> None:
        self._raw_deflate = encoding == "deflate"
        self._started = False
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding != "deflate" else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        obj = self._obj
        if self._raw_deflate and not self._started:
            self._started = True
            try:  # "deflate" is zlib-wrapped by the standard, raw by some servers
                zlib.decompressobj().decompress(data[:2])
            except zlib.error:
                obj = self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        buf = data
        while True:
            try:
                out = obj.decompress(buf, PIECE)
            except zlib.error as exc:
                raise httpx.DecodingError(f"could not decompress the response body: {exc}") from None
            buf = obj.unconsumed_tail
            if out:
                yield out
            if obj.eof or (not buf and len(out) < PIECE):
                return

    def flush(self) -> Iterator[bytes]:
        yield from self.decode(b"")


class BoundedDecoder:
    """Decodes a ``Content-Encoding`` chain (gzip, x-gzip, deflate, identity), at most `PIECE` bytes per step."""

    __slots__ = ("_stages",)

    def __init__(self, content_encoding: str | None) -> None:
        names = [n.strip().lower() for n in (content_encoding or "").split(",") if n.strip()]
        stages: list[_Inflater] = []
        for name in reversed(names):  # the last encoding applied is undone first
            if name in ("identity", ""):
                continue
            if name not in ("gzip", "x-gzip", "deflate"):
                raise httpx.DecodingError(f"the server used Content-Encoding {name!r}, which was not asked for")
            stages.append(_Inflater("deflate" if name == "deflate" else "gzip"))
        self._stages = stages

    @property
    def inflates(self) -> bool:
        """False for an identity body (the bytes are the body)."""
        return bool(self._stages)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data`` (each at most 64 KiB when the body is compressed)."""
        if not self._stages:
            if data:
                yield data
            return
        yield from self._through(0, data)

    def _through(self, i: int, data: bytes) -> Iterator[bytes]:
        stage = self._stages[i]
        if i == len(self._stages) - 1:
            yield from stage.decode(data)
            return
        for piece in stage.decode(data):
            yield from self._through(i + 1, piece)

    def flush(self) -> Iterator[bytes]:
        """Whatever the decompressors still hold at the end of the body."""
        for i, stage in enumerate(self._stages):
            for piece in stage.flush():
                if i == len(self._stages) - 1:
                    yield piece
                else:
                    yield from self._through(i + 1, piece)


def too_large(limit: int) -> ResponseTooLargeError:
    return ResponseTooLargeError(
        f"The response body is larger than {limit} bytes after decompression (the max_response_bytes limit); "
        "the connection was closed and the call was not retried. Raise max_response_bytes on the client if "
        "this server is trusted and really returns bodies that large.", limit=limit)


class BodyReader:
    """Collects a body from raw (possibly compressed) pieces, never holding more than ``limit`` decoded bytes."""

    __slots__ = ("_decoder", "_identity", "_parts", "limit", "total")

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        self._decoder = BoundedDecoder(content_encoding)
        self._identity = not self._decoder.inflates
        self._parts: list[bytes] = []
        self.limit = limit
        self.total = 0

    def feed(self, raw: bytes) -> None:
        """Add raw bytes; raises `ResponseTooLargeError` once the decoded size passes the limit."""
        if self._identity:  # the common case, without a generator per piece
            self.total += len(raw)
            if self.total > self.limit:
                self._parts.clear()
                raise too_large(self.limit)
            self._parts.append(raw)
            return
        self._add(self._decoder.decode(raw))

    def _add(self, pieces: Iterator[bytes]) -> None:
        for piece in pieces:
            self.total += len(piece)
            if self.total > self.limit:
                self._parts.clear()
                raise too_large(self.limit)
            self._parts.append(piece)

    def finish(self) -> bytes:
        """The whole decoded body."""
        if not self._identity:
            self._add(self._decoder.flush())
        parts = self._parts
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _in_memory(response: httpx.Response) -> bool:
    """A response built with its body already read (``httpx.MockTransport``, a test double): nothing to stream."""
    if not response.is_stream_consumed:
        return False
    try:
        response.content  # noqa: B018  (raises ResponseNotRead for a stream read by someone else)
    except httpx.ResponseNotRead:
        return False
    return True


def _read(response: httpx.Response, content: bytes) -> httpx.Response:
    """``response`` with its decoded body: a new, read response (the public constructor), its headers the server's."""
    built = decoded_response(httpx.Response, response.status_code, headers=response.headers, content=content,
                             request=response.request, extensions=response.extensions)
    built.history, built.default_encoding = response.history, response.default_encoding
    with contextlib.suppress(RuntimeError):  # set when its stream was closed (by httpx's client)
        built.elapsed = response.elapsed
    return built


def _check_in_memory(response: httpx.Response, limit: int) -> None:
    if len(response.content) > limit:
        reader = BodyReader(None, limit)
        reader.feed(response.content)  # raises the usual ResponseTooLargeError


def read_body(response: httpx.Response, limit: int, deadline: Deadline | None = None) -> httpx.Response:
    """Read a streamed httpx response, bounded in size and time; always closes it. The response read (a new
    one, unless ``response`` was read already)."""
    if _in_memory(response):
        _check_in_memory(response, limit)
        return response
    reader = BodyReader(response.headers.get("content-encoding"), limit)
    try:
        for raw in response.iter_raw():
            reader.feed(raw)
            if deadline is not None:
                deadline.check()
        content = reader.finish()
    finally:
        response.close()
    return _read(response, content)


async def read_body_async(response: httpx.Response, limit: int,
                          deadline: Deadline | None = None) -> httpx.Response:
    """`read_body` for an async httpx response."""
    if _in_memory(response):
        _check_in_memory(response, limit)
        return response
    reader = BodyReader(response.headers.get("content-encoding"), limit)
    try:
        async for raw in response.aiter_raw():
            reader.feed(raw)
            if deadline is not None:
                deadline.check()
        content = reader.finish()
    finally:
        await response.aclose()
    return _read(response, content)


async def read_aiohttp_body(resp: Any, limit: int) -> bytes:
    """Read an aiohttp response opened with ``auto_decompress=False``, bounded by ``limit`` decoded bytes.

    Releases the connection after a complete body; closes it when the limit is passed or reading fails.
    """
    ok = False
    try:
        body = await _read_aiohttp(resp, limit)
        ok = True
        return body
    finally:
        if ok:
            resp.release()
        else:
            resp.close()


async def _read_aiohttp(resp: Any, limit: int) -> bytes:
    length = resp.content_length
    encoding = resp.headers.get("Content-Encoding")
    if (length is not None and length <= limit and encoding in (None, "", "identity")
            and "Transfer-Encoding" not in resp.headers):
        # The parser stops at Content-Length, so the body cannot pass the limit (and no reader per piece).
        body: bytes = await resp.read()
        return body
    reader = BodyReader(encoding, limit)
    async for raw in resp.content.iter_chunked(PIECE):
        reader.feed(raw)
    return reader.finish()


def iter_decoded(response: httpx.Response) -> Iterator[bytes]:
    """A streamed httpx response's body, decompressed in bounded pieces."""
    if _in_memory(response):
        yield response.content
        return
    decoder = BoundedDecoder(response.headers.get("content-encoding"))
    if not decoder.inflates:  # identity: the raw pieces as they come (no generator per piece)
        yield from response.iter_raw()
        return
    for raw in response.iter_raw():
        yield from decoder.decode(raw)
    yield from decoder.flush()


async def aiter_decoded(response: httpx.Response) -> AsyncIterator[bytes]:
    """`iter_decoded` for an async httpx response."""
    if _in_memory(response):
        yield response.content
        return
    decoder = BoundedDecoder(response.headers.get("content-encoding"))
    if not decoder.inflates:
        async for raw in response.aiter_raw():
            yield raw
        return
    async for raw in response.aiter_raw():
        for piece in decoder.decode(raw):
            yield piece
    for piece in decoder.flush():
        yield piece

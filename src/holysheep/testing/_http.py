"""Minimal HTTP/1.1 for the fake server: read one request from a stream, build response bytes.

Only what an API client sends is supported: a request line, headers, and a body framed by
``Content-Length`` or ``Transfer-Encoding: chunked``. Keep-alive is the HTTP/1.1 default.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus

__all__ = [
    "LAST_CHUNK",
    "HTTPError",
    "HTTPRequest",
    "build_head",
    "build_response",
    "encode_chunk",
    "read_request",
    "reset_connection",
    "serve_connection",
    "write_body",
    "write_sse",
]

MAX_BODY_BYTES = 64 * 1024 * 1024
LAST_CHUNK = b"0\r\n\r\n"
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_REASONS: dict[int, str] = {s.value: s.phrase for s in HTTPStatus}


class HTTPError(Exception):
    """The request could not be parsed; the server answers ``status`` and closes the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class HTTPRequest:
    """One parsed request. Header names are lower-case; repeated headers are joined with ``", "``."""

    method: str
    target: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> HTTPRequest | None:
    """Read the next request, or return ``None`` when the peer closed the connection between requests.

    Raises `HTTPError` for a malformed request and ``asyncio.IncompleteReadError`` when the peer
    goes away in the middle of one.
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise
    except asyncio.LimitOverrunError as exc:
        raise HTTPError(431, "request header section too large") from exc
    lines = head[:-4].decode("latin-1").lstrip("\r\n").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/1."):
        raise HTTPError(400, f"malformed request line: {lines[0][:100]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name[-1] in " \t":
            raise HTTPError(400, f"malformed header line: {line[:100]!r}")
        name = name.lower()
        value = value.strip()
        if name in headers:
            if name == "content-length" and headers[name] != value:
                raise HTTPError(400, "conflicting content-length headers")
            if name != "content-length":
                headers[name] = headers[name] + ", " + value
        else:
            headers[name] = value

    if headers.get("expect", "").lower() == "100-continue":
        writer.write(_CONTINUE)
    body = b""
    encoding = headers.get("transfer-encoding")
    if encoding is not None:
        if encoding.lower() != "chunked":
            raise HTTPError(501, f"unsupported transfer-encoding: {encoding[:50]!r}")
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        raw_length = headers["content-length"]
        if not raw_length.isdigit():
            raise HTTPError(400, f"invalid content-length: {raw_length[:50]!r}")
        length = int(raw_length)
        if length > MAX_BODY_BYTES:
            raise HTTPError(413, "request body too large")
        if length:
            body = await reader.readexactly(length)

    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    path, _, query = target.partition("?")
    return HTTPRequest(method, target, path, query, headers, body, keep_alive)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise HTTPError(400, "malformed chunk size") from exc
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # skip trailers
                pass
            return b"".join(chunks)
        total += size
        if total > MAX_BODY_BYTES:
            raise HTTPError(413, "request body too large")
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise HTTPError(400, "malformed chunk terminator")


def build_head(status: int, headers: list[tuple[str, str]], *, keep_alive: bool) -> bytes:
    """The status line and header section, ending with the blank line."""
    out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n"]
    out.extend(f"{name}: {value}\r\n" for name, value in headers)
    if not keep_alive:
        out.append("connection: close\r\n")
    out.append("\r\n")
    return "".join(out).encode("latin-1")


def build_response(
    status: int, body: bytes, content_type: str, headers: list[tuple[str, str]], *, keep_alive: bool
) -> bytes:
    """A complete response with a ``Content-Length`` body."""
    all_headers = [("content-type", content_type), ("content-length", str(len(body))), *headers]
    return build_head(status, all_headers, keep_alive=keep_alive) + body


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a ``Transfer-Encoding: chunked`` body."""
    return b"%x\r\n%b\r\n" % (len(data), data)


async def write_body(
    writer: asyncio.StreamWriter,
    status: int,
    data: bytes,
    content_type: str,
    headers: list[tuple[str, str]],
    *,
    keep_alive: bool,
    cut: bool = False,
) -> None:
    """Send a ``Content-Length`` response; with ``cut``, only the head and the first half of the body."""
    payload = build_response(status, data, content_type, headers, keep_alive=keep_alive)
    writer.write(payload[: len(payload) - (len(data) + 1) // 2] if cut else payload)
    await writer.drain()


async def write_sse(
    writer: asyncio.StreamWriter,
    events: list[bytes],
    headers: list[tuple[str, str]],
    *,
    keep_alive: bool,
    cut: bool = False,
    delay: float = 0.0,
    paced: range = range(0),
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Send an SSE response as a chunked body, one chunk per event, sleeping ``delay`` (with ``sleep``) before
    each event whose index is in ``paced``; with ``cut``, the body is left without its last chunk."""
    head = build_head(
        200,
        [
            ("content-type", "text/event-stream; charset=utf-8"),
            ("transfer-encoding", "chunked"),
            ("cache-control", "no-cache"),
            *headers,
        ],
        keep_alive=keep_alive,
    )
    end = b"" if cut else LAST_CHUNK
    if delay <= 0 or not paced:
        writer.write(head + b"".join(map(encode_chunk, events)) + end)
    else:
        writer.write(head)
        for i, event in enumerate(events):
            if i in paced:
                await writer.drain()
                await sleep(delay)
            writer.write(encode_chunk(event))
        writer.write(end)
    await writer.drain()


async def serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    respond: Callable[[HTTPRequest], Awaitable[bool]],
) -> None:
    """Answer requests on one keep-alive connection until the peer closes it, a request is malformed
    (answered with a JSON error), or ``respond`` returns False; then close the connection."""
    try:
        while True:
            try:
                req = await read_request(reader, writer)
            except HTTPError as exc:
                error = {"message": exc.message, "type": "invalid_request_error", "param": None, "code": None}
                body = json.dumps({"error": error}, separators=(",", ":")).encode()
                writer.write(build_response(exc.status, body, "application/json", [], keep_alive=False))
                break
            if req is None or not await respond(req):
                break
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def reset_connection(writer: asyncio.StreamWriter) -> None:
    """Drop the connection with a TCP RST (``SO_LINGER`` 0), sending nothing more."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()

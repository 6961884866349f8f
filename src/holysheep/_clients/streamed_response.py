"""``with_streaming_response``: a response handed over before its body is read (openai-python's ``APIResponse``
and ``AsyncAPIResponse``). The status was decided (retried, or raised as a typed error) before it came here;
the body is read only when the caller asks, within ``max_response_bytes`` and the attempt's deadline, and leaving
the ``with`` block unread closes the connection. For ``stream=True``, ``parse()`` gives the event stream and the
raw methods the server's bytes (one or the other: `holysheep._clients.stream_body`), except that a body ``read()``
whole is kept and the stream then gives the events decoded from it (as openai-python does)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

import httpx

from holysheep._clients.stream_body import aiter_raw_sse, iter_raw_sse
from holysheep._core.body_chunks import LineSplitter, Rechunker, text_decoder
from holysheep._core.body_report import BodyWatch, watch_body
from holysheep._core.call import RawResponse
from holysheep._core.json_check import load_json
from holysheep._core.parse_to import check_to
from holysheep._core.raw_response import _UNSET, APIResponse, BaseAPIResponse, RawMode
from holysheep._exceptions import ResponseConsumedError
from holysheep._transports.deadlines import ReadBudget
from holysheep._transports.lazy_body import aiter_body, iter_body

if TYPE_CHECKING:
    from holysheep._core.call import Call

__all__ = ["AsyncStreamedAPIResponse", "StreamedAPIResponse", "raw_reply"]

R = TypeVar("R")
_T = TypeVar("_T")


class _Lazy(BaseAPIResponse[R]):
    """What the sync and async responses share: the unread httpx response, the call, the byte and time bounds.
    ``value``: the stream already made of the response (``stream=True``), whose events ``parse()`` gives."""

    def __init__(self, response: httpx.Response, call: Call, *, value: Any = _UNSET) -> None:
        super().__init__(response.status_code, response.headers, call=call, value=value)
        self._http = response
        self._response = response if value is _UNSET else None  # None: the body belongs to the stream
        self._lazy_call = call
        self._budget = ReadBudget(call.deadline_s, call.elapsed)  # the time to the headers is spent already
        self._content: bytes | None = None
        self._taken = False  # the body was iterated (or the response closed) without being kept
        self._watch: BodyWatch | None = None  # what the call's hooks learn of the body (None: no hook listens)
        if call.ctx is not None and self._response is not None:
            self._watch = watch_body(call.ctx, response.status_code, response.headers, call.api_key, call.served_by,
                                     self._parsed, call.config.max_response_bytes)

    @property
    def is_closed(self) -> bool:
        """True once the body was read to its end or the response closed (its connection released)."""
        return self._http.is_closed

    def _start(self) -> httpx.Response | None:
        """The response to read from, or None when the body was read and kept; raises when it cannot be read."""
        if self._content is not None:
            return None
        if self._taken:
            raise ResponseConsumedError
        self._taken = True
        return self._response

    def _fail(self, failure: httpx.RequestError) -> NoReturn:
        """Raise a transport failure while reading as the call's typed error (never retried). Called outside the
        ``except`` block, so that no ``__context__`` keeps the raw request (and its key)."""
        error, cause = self._lazy_call.body_error(failure)
        self._failed(error)
        raise error from cause

    # What the hooks are told (through the core's BodyWatch, which decides what it means), once: then dropped.
    def _ended(self, content: bytes | None) -> None:
        watch = self._watch
        if watch is not None:
            self._watch = None
            watch.ended(content)

    def _failed(self, error: BaseException) -> None:
        watch = self._watch
        if watch is not None:
            self._watch = None
            watch.failed(error)

    def _closed(self) -> None:
        watch = self._watch
        if watch is not None:
            self._watch = None
            watch.closed()

    def _parsed(self, content: bytes) -> R:
        if self._value is _UNSET:  # the plain call's parser: same typed result, same errors
            self._value = self._lazy_call.parse_body(RawResponse(self.status_code, self.headers, content))
        value: R = self._value
        return value

    def _text(self, content: bytes) -> str:
        return text_decoder(self.headers).decode(content, final=True)

    def _events(self, to: Any) -> Any:
        """``parse()`` of a ``stream=True`` response: the primed stream (after a whole ``read()``, it decodes the
        kept bytes), unless its raw body was iterated or read part way, and not kept."""
        stream = self._value
        if stream._raw_taken and self._content is None:
            raise ResponseConsumedError(
                "This stream=True response's raw body was iterated (iter_bytes()/iter_text()/iter_lines(), to its "
                "end or part way) or its read() failed; such a body is not kept, so its events are gone. Call "
                "read() first (it keeps the body, and parse() then gives the events decoded from it), or parse() "
                "and iterate the stream instead of the raw methods.")
        return stream if to is None else self._stream_as(to)

    def _kept(self, content: bytes) -> None:
        """``read()`` kept the whole body: a ``stream=True`` response's stream gives its events from it."""
        if self._response is None:
            self._value._replay(content)

    def _limit(self) -> int | None:
        """The most bytes ``read()`` keeps of a stream's raw body (a plain body is bounded when it is read)."""
        return self._lazy_call.config.max_response_bytes if self._response is None else None


class StreamedAPIResponse(_Lazy[R]):
    """The response of ``with_streaming_response`` on a sync client: the status and headers are known, the body
    is read when asked (``read()``, ``text()``, ``json()``, ``parse()``) or streamed (``iter_bytes()``,
    ``iter_text()``, ``iter_lines()``), within ``max_response_bytes`` and the call's ``timeout``. For
    ``stream=True``, ``parse()`` gives the event stream."""

    def _pieces(self, limit: int | None = None) -> Iterator[bytes]:
        if self._response is None and self._content is None:  # stream=True: the raw body (events not parsed)
            yield from iter_raw_sse(self._value, self._lazy_call, limit)
            return
        response = self._start()
        if response is None:
            assert self._content is not None
            if self._content:
                yield self._content
            return
        failure: httpx.RequestError | None = None
        watch = self._watch
        try:
            if watch is None:
                yield from iter_body(response, self._lazy_call.config.max_response_bytes, self._budget)
            else:
                for piece in iter_body(response, self._lazy_call.config.max_response_bytes, self._budget):
                    watch.piece(piece)
                    yield piece
        except httpx.RequestError as exc:
            failure = exc
        except Exception as exc:  # ResponseTooLargeError: the caller's typed error already
            self._failed(exc)
            raise
        if failure is not None:
            self._fail(failure)

    def read(self) -> bytes:
        """The whole body (read once, then kept). Raises `ResponseTooLargeError` past ``max_response_bytes``,
        `APITimeoutError` when the server takes longer than the call's ``timeout``, `ResponseConsumedError`
        after iterating."""
        if self._content is None:
            if self._watch is not None:
                self._watch.keep()
            self._content = b"".join(self._pieces(self._limit()))
            self._kept(self._content)
            if self._watch is not None:
                self._ended(self._content)
        return self._content

    def text(self) -> str:
        """The body as text (the ``Content-Type`` charset, else UTF-8)."""
        return self._text(self.read())

    def json(self) -> Any:
        """The body decoded as JSON (nesting deeper than 200 levels is a ``ValueError``)."""
        return load_json(self.read())

    @overload
    def parse(self) -> R: ...

    @overload
    def parse(self, *, to: type[_T]) -> _T: ...

    def parse(self, *, to: object = None) -> Any:
        """What the plain call returns (a ``ChatCompletion``, a model list, ...; the stream for ``stream=True``),
        parsed once, with the same errors: `APIResponseValidationError` for a body that is not the expected
        JSON or a 200 that carries no answer (not retried here: the response was already handed over).
        ``to``: the body as another type (see `APIResponse.parse`). For ``stream=True`` after ``read()``, the
        stream decodes the kept bytes (the hooks heard its end during the read, once); after ``iter_bytes()``,
        ``iter_text()`` or ``iter_lines()`` (not kept): `ResponseConsumedError`."""
        if self._response is None:
            return self._events(to)
        if to is not None:
            check_to(to)  # before anything is read
            return self._as(to, self.read())
        return self._parsed(self.read())

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        """The body's decoded bytes as they arrive (in chunks of ``chunk_size`` bytes when given). The body is
        not kept: a second read raises `ResponseConsumedError`."""
        return self._chunks(Rechunker(chunk_size))  # chunk_size is checked now, not on the first chunk

    def _chunks(self, chunker: Rechunker) -> Iterator[bytes]:
        for piece in self._pieces():
            yield from chunker.feed(piece)
        if self._watch is not None:
            self._ended(None)
        yield from chunker.flush()

    def iter_text(self, chunk_size: int | None = None) -> Iterator[str]:
        """The body as text, piece by piece (a character split across pieces is kept whole)."""
        return self._texts(self.iter_bytes(chunk_size))

    def _texts(self, chunks: Iterator[bytes]) -> Iterator[str]:
        decoder = text_decoder(self.headers)
        for data in chunks:
            text = decoder.decode(data)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    def iter_lines(self) -> Iterator[str]:
        """The body's lines as they arrive, without their line endings."""
        lines = LineSplitter()
        for text in self.iter_text():
            yield from lines.feed(text)
        yield from lines.flush()

    def close(self) -> None:
        """Release the connection; an unread body is not read (the connection is closed). Idempotent."""
        if self._content is None:
            self._taken = True
        if self._response is not None:
            self._response.close()
            if self._watch is not None:
                self._closed()
        else:
            close = getattr(self._value, "close", None)
            if close is not None:
                close()



class AsyncStreamedAPIResponse(_Lazy[R]):
    """`StreamedAPIResponse` for ``AsyncClient`` (both transports): ``await response.read()``, ``.text()``,
    ``.json()``, ``.parse()``, ``async for ... in response.iter_bytes()`` (``iter_text``, ``iter_lines``)."""

    async def _pieces(self, limit: int | None = None) -> AsyncIterator[bytes]:
        if self._response is None and self._content is None:  # stream=True: the raw body (events not parsed)
            async for piece in aiter_raw_sse(self._value, self._lazy_call, limit):
                yield piece
            return
        response = self._start()
        if response is None:
            assert self._content is not None
            if self._content:
                yield self._content
            return
        failure: httpx.RequestError | None = None
        watch = self._watch
        try:
            if watch is None:
                async for piece in aiter_body(response, self._lazy_call.config.max_response_bytes, self._budget):
                    yield piece
            else:
                async for piece in aiter_body(response, self._lazy_call.config.max_response_bytes, self._budget):
                    watch.piece(piece)
                    yield piece
        except httpx.RequestError as exc:
            failure = exc
        except Exception as exc:  # ResponseTooLargeError: the caller's typed error already
            self._failed(exc)
            raise
        if failure is not None:
            self._fail(failure)

    async def read(self) -> bytes:
        """The whole body (read once, then kept); the errors of `StreamedAPIResponse.read`."""
        if self._content is None:
            if self._watch is not None:
                self._watch.keep()
            self._content = b"".join([piece async for piece in self._pieces(self._limit())])
            self._kept(self._content)
            if self._watch is not None:
                self._ended(self._content)
        return self._content

    async def text(self) -> str:
        """The body as text (the ``Content-Type`` charset, else UTF-8)."""
        return self._text(await self.read())

    async def json(self) -> Any:
        """The body decoded as JSON."""
        return load_json(await self.read())

    @overload
    async def parse(self) -> R: ...

    @overload
    async def parse(self, *, to: type[_T]) -> _T: ...

    async def parse(self, *, to: object = None) -> Any:
        """What the plain call returns, parsed once, with its errors (see `StreamedAPIResponse.parse`)."""
        if self._response is None:
            return self._events(to)
        if to is not None:
            check_to(to)
            return self._as(to, await self.read())
        return self._parsed(await self.read())

    def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        """The body's decoded bytes as they arrive (in chunks of ``chunk_size`` bytes when given); not kept."""
        return self._chunks(Rechunker(chunk_size))

    async def _chunks(self, chunker: Rechunker) -> AsyncIterator[bytes]:
        async for piece in self._pieces():
            for chunk in chunker.feed(piece):
                yield chunk
        if self._watch is not None:
            self._ended(None)
        for chunk in chunker.flush():
            yield chunk

    def iter_text(self, chunk_size: int | None = None) -> AsyncIterator[str]:
        """The body as text, piece by piece."""
        return self._texts(self.iter_bytes(chunk_size))

    async def _texts(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
        decoder = text_decoder(self.headers)
        async for data in chunks:
            text = decoder.decode(data)
            if text:
                yield text
        rest = decoder.decode(b"", final=True)
        if rest:
            yield rest

    async def iter_lines(self) -> AsyncIterator[str]:
        """The body's lines as they arrive, without their line endings."""
        lines = LineSplitter()
        async for text in self.iter_text():
            for line in lines.feed(text):
                yield line
        for line in lines.flush():
            yield line

    async def close(self) -> None:
        """Release the connection; an unread body is not read (the connection is closed). Idempotent."""
        if self._content is None:
            self._taken = True
        if self._response is not None:
            await self._response.aclose()
            if self._watch is not None:
                self._closed()
        else:
            close = getattr(self._value, "close", None)
            if close is not None:
                await close()

    async def aclose(self) -> None:
        """The same as ``close()``."""
        await self.close()



def raw_reply(result: Any, call: Call, stream: bool, mode: RawMode, streamed: type[_Lazy[object]]) -> Any:
    """What ``with_raw_response`` (``mode="raw"``) or ``with_streaming_response`` (``"stream"``) hands over for a
    finished call's ``result``: ``streamed`` (the sync or the async class) around the unread response or the
    primed stream, or an `APIResponse` (around the primed stream when ``stream`` is set)."""
    if mode == "stream":
        if stream:
            return streamed(result.response, result._call, value=result)
        return streamed(result, call)
    if stream:
        response = result.response
        return APIResponse(response.status_code, response.headers, None, call=result._call, value=result)
    return result

"""Sync and async chat streams: thin shells that pull bytes and hand them to :class:`StreamState`."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Generic, TypeVar

import httpx

from ._exceptions import APIConnectionError, StreamIdleTimeoutError, StreamInterruptedError
from ._keys import redact
from ._limits import IdleClock, aiter_decoded, iter_decoded, within_deadline
from ._scrub import scrub_cause
from ._stream_state import StreamMetrics, StreamState
from .types.chat import ChatCompletion, ChatCompletionChunk

if TYPE_CHECKING:
    from ._call import Call

__all__ = ["AsyncStream", "Stream"]

_T = TypeVar("_T", bound=ChatCompletionChunk)


def _interrupted(state: StreamState, exc: Exception | None, call: Call, idle: float | None) -> APIConnectionError:
    state.mark_end()
    text = state.partial_text
    seen = f"after {state.chunks} chunks ({len(text)} characters)"
    if isinstance(exc, httpx.ReadTimeout) and idle is not None:
        return StreamIdleTimeoutError(
            f"The stream stalled: no event for {idle:g} s (stream_idle_timeout) {seen}. The text so far is "
            "in .partial_text; raise stream_idle_timeout if the model is slow to start.",
            partial_text=text)
    cause = redact(str(exc), call.api_key) if exc is not None else "the server closed it before [DONE]"
    return StreamInterruptedError(
        f"The stream was interrupted {seen}: {cause or type(exc).__name__}. The text so far is in "
        ".partial_text; it was not retried because part of the output had already arrived.",
        partial_text=text)


def _idle_error(idle: float) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(f"no server-sent event for {idle:g} s")


_DRAIN_LIMIT = 65536  # after [DONE], read at most this much more so the connection can be reused
_DRAIN_SECONDS = 1.0  # ... for at most this long; a server that holds the connection open is not waited out


def _framed(response: httpx.Response) -> bool:
    """A body with its own end (chunked or Content-Length) can be drained so the connection is reused; one that
    ends only when the server closes the connection cannot, so it is not waited for."""
    headers = response.headers
    return "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()


def _drain_sync(chunks: Iterator[bytes]) -> None:
    seen = 0
    until = time.monotonic() + _DRAIN_SECONDS
    try:
        for data in chunks:
            seen += len(data)
            if seen > _DRAIN_LIMIT or time.monotonic() > until:
                return
    except httpx.HTTPError:  # the answer is complete; a failure after [DONE] only costs the connection
        return


async def _drain_async(chunks: AsyncIterator[bytes]) -> None:
    async def drain() -> None:
        seen = 0
        async for data in chunks:
            seen += len(data)
            if seen > _DRAIN_LIMIT:
                return

    try:
        await within_deadline(drain(), _DRAIN_SECONDS)
    except httpx.HTTPError:  # the answer is complete; a failure after [DONE] only costs the connection
        return


def _iter_sync(response: httpx.Response, state: StreamState, call: Call) -> Generator[_T, None, None]:
    failure: httpx.RequestError | None = None
    idle = call.idle_timeout
    clock = IdleClock(idle) if idle is not None else None
    try:
        chunks = iter_decoded(response)  # inflated in bounded pieces; the SSE decoder caps lines and events
        for data in chunks:
            yield from state.feed(data)  # type: ignore[misc]
            if state.done:
                if _framed(response):
                    _drain_sync(chunks)
                return
            if clock is not None and clock.expired(state.events):  # events, not bytes, reset the clock
                raise _idle_error(clock.idle)
        yield from state.finish_stream()  # type: ignore[misc]
        if not (state.done or state.finish):
            raise _interrupted(state, None, call, idle)
    except httpx.RequestError as exc:
        failure = exc
    finally:
        state.mark_end()
        response.close()
    if failure is not None:  # raised outside the handler: no __context__ holding the raw request
        raise _interrupted(state, failure, call, idle) from scrub_cause(failure, call.api_key)


async def _iter_async(response: httpx.Response, state: StreamState, call: Call) -> AsyncGenerator[_T, None]:
    failure: httpx.RequestError | None = None
    idle = call.idle_timeout
    clock = IdleClock(idle) if idle is not None else None
    try:
        chunks = aiter_decoded(response)
        async for data in chunks:
            for chunk in state.feed(data):
                yield chunk  # type: ignore[misc]
            if state.done:
                if _framed(response):
                    await _drain_async(chunks)
                return
            if clock is not None and clock.expired(state.events):
                raise _idle_error(clock.idle)
        for chunk in state.finish_stream():
            yield chunk  # type: ignore[misc]
        if not (state.done or state.finish):
            raise _interrupted(state, None, call, idle)
    except httpx.RequestError as exc:
        failure = exc
    finally:
        state.mark_end()
        await response.aclose()
    if failure is not None:
        raise _interrupted(state, failure, call, idle) from scrub_cause(failure, call.api_key)


class _StreamBase(Generic[_T]):
    def __init__(self, response: httpx.Response, call: Call) -> None:
        self.response = response
        self._call = call
        self._state = StreamState(call.started_at, secret=call.api_key,
                                  max_event_bytes=call.config.max_sse_event_bytes)

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id``."""
        value: str | None = self.response.headers.get("x-request-id")
        return value

    @property
    def retries_taken(self) -> int:
        """Retries needed before the stream started."""
        return self._call.retries_taken

    @property
    def metrics(self) -> StreamMetrics:
        """TTFT, inter-token latency and throughput (final once the stream has ended)."""
        return self._state.metrics()

    @property
    def text(self) -> str:
        """The content received so far (choice 0)."""
        return self._state.partial_text

    def _final(self) -> ChatCompletion:
        completion = self._state.final_completion()
        completion._request_id = self.request_id
        completion._retries_taken = self._call.retries_taken
        completion._served_by = self._call.served_by
        return completion


class Stream(_StreamBase[_T]):
    """A streamed chat completion: iterate for chunks; use ``with`` so the connection is released."""

    def __init__(self, response: httpx.Response, call: Call) -> None:
        super().__init__(response, call)
        # The generator must not reference ``self``: then dropping an unfinished stream frees it at once
        # (no reference cycle), and the generator's ``finally`` releases the connection.
        self._iterator: Generator[_T, None, None] = _iter_sync(response, self._state, call)

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        return next(self._iterator)

    def __enter__(self) -> Stream[_T]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        self._iterator.close()
        self.response.close()

    def until_done(self) -> Stream[_T]:
        """Read the rest of the stream."""
        for _ in self:
            pass
        return self

    def get_final_completion(self) -> ChatCompletion:
        """Read to the end, then return the chunks folded into one :class:`ChatCompletion`."""
        self.until_done()
        return self._final()


class AsyncStream(_StreamBase[_T]):
    """An async streamed chat completion: ``async for`` the chunks inside ``async with``."""

    def __init__(self, response: httpx.Response, call: Call) -> None:
        super().__init__(response, call)
        self._iterator: AsyncGenerator[_T, None] = _iter_async(response, self._state, call)

    def __aiter__(self) -> AsyncStream[_T]:
        return self

    async def __anext__(self) -> _T:
        return await self._iterator.__anext__()

    async def __aenter__(self) -> AsyncStream[_T]:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        await self._iterator.aclose()
        await self.response.aclose()

    async def until_done(self) -> AsyncStream[_T]:
        """Read the rest of the stream."""
        async for _ in self:
            pass
        return self

    async def get_final_completion(self) -> ChatCompletion:
        """Read to the end, then return the chunks folded into one :class:`ChatCompletion`."""
        await self.until_done()
        return self._final()

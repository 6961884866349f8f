"""A stream's body beyond its events: what is drained after ``[DONE]`` so the connection can be reused, and the
raw body handed to a caller of ``with_streaming_response`` who reads the server's bytes (``read()``,
``iter_bytes()``, ``iter_text()``, ``iter_lines()``) instead of the events, within the stream's own limits:
lines and events capped at ``max_sse_event_bytes``, ``stream_idle_timeout`` counted in events (bytes that complete
no event do not reset it), each read within the call's read timeout, and a body kept by ``read()`` at most
``max_response_bytes``. The bytes still go through the stream's state, so the hooks' one ``on_stream_end`` (at
the end of the body, on a read error, or ``closed`` when the caller leaves the ``with`` block first) reports the
usage, text and metrics the parsed stream would have; an error event or a cut-off body, which the caller sees
in the bytes, is that event's ``error`` (nothing is raised to the caller for it). A body ``read()`` whole is kept,
and the stream's events are then decoded from those bytes (`replay_sync`, `replay_async`), as openai-python's
``parse()`` after ``read()`` does; the hooks heard its end already (once)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from holysheep._core.stream_state import StreamState
from holysheep._exceptions import (
    ResponseConsumedError,
    StreamIdleTimeoutError,
    StreamInterruptedError,
)
from holysheep._transports.body import too_large
from holysheep._transports.deadlines import IdleClock, within_deadline

if TYPE_CHECKING:
    from holysheep._core.call import Call

__all__ = ["aiter_raw_sse", "iter_raw_sse", "replay_async", "replay_sync"]


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




class _Consumed:
    """A stream's events after its raw body was handed out: every read raises `ResponseConsumedError`."""

    @staticmethod
    def _error() -> ResponseConsumedError:
        return ResponseConsumedError(
            "This stream=True response's raw body was iterated (iter_bytes()/iter_text()/iter_lines()) or its read() "
            "failed, and such a body is not kept, so its events are gone. Call read() first (it keeps the body, "
            "and the stream then gives the events decoded from it), or iterate the stream instead of the raw methods.")

    def __next__(self) -> Any:
        raise self._error()

    async def __anext__(self) -> Any:
        raise self._error()

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _RawSync(Protocol):
    _state: StreamState

    def _take_raw(self) -> tuple[list[bytes], Iterator[bytes]]: ...
    def _raw_end(self, error: BaseException | None) -> None: ...


class _RawAsync(Protocol):
    _state: StreamState

    def _take_raw(self) -> tuple[list[bytes], AsyncIterator[bytes]]: ...
    async def _raw_end(self, error: BaseException | None) -> None: ...


class _Observer:
    """The stream's bounds on its raw body, and what the hooks hear of it: each piece after the hand-over goes
    through the stream's state (its SSE decoder caps lines and events and counts events for the idle clock; the
    events update the usage, text and metrics the hooks' ``on_stream_end`` reports). ``limit``: the most bytes,
    for a body kept whole."""

    __slots__ = ("clock", "limit", "state", "total")

    def __init__(self, state: StreamState, call: Call, limit: int | None) -> None:
        self.state = state
        self.clock = IdleClock(call.idle_timeout) if call.idle_timeout is not None else None
        self.limit = limit
        self.total = 0

    def count(self, piece: bytes) -> bytes:
        """A piece read before the hand-over (the state has seen it already)."""
        self.total += len(piece)
        if self.limit is not None and self.total > self.limit:
            raise too_large(self.limit)
        return piece

    def check(self, piece: bytes) -> bytes:
        self.count(piece)
        self.state.observe(piece)
        if self.state.overflow is not None:  # a bound, not the server's word: raised to the reader
            raise self.state.too_large()
        clock = self.clock
        state = self.state  # progress resets the clock; once the stream failed (raw_error), any event does
        if clock is not None and clock.expired(state.progress if state.raw_error is None else state.events):
            raise StreamIdleTimeoutError(
                f"The stream stalled: no progress for {clock.idle:g} s (stream_idle_timeout) while its raw body was "
                f"read ({self.total} bytes). Raise stream_idle_timeout if the model is slow to answer.",
                partial_text=self.state.partial_text)
        return piece

    def end(self) -> Exception | None:
        """At the end of the body: what the hooks hear as the stream's error (the caller has its bytes): an error
        the stream would have raised, or an end without ``[DONE]`` or a finish reason."""
        state = self.state
        state.observe_end()
        if state.raw_error is not None:
            return state.raw_error
        if not (state.done or state.finish):
            return StreamInterruptedError(
                f"The stream's raw body ended after {state.chunks} chunks without [DONE] or a finish reason: it was "
                "cut off.", partial_text=state.partial_text)
        return None


def iter_raw_sse(stream: _RawSync, call: Call, limit: int | None) -> Iterator[bytes]:
    """The raw body of a primed ``stream``, from its first byte, within the stream's limits (``limit``: the most
    bytes, for a body kept whole). Its end, or its typed error, is the stream's end for the hooks, and releases
    the connection; a caller who stops early closes the response (the hooks then hear it was closed)."""
    head, rest = stream._take_raw()
    limits = _Observer(stream._state, call, limit)
    failure: httpx.RequestError | None = None
    try:
        head.reverse()  # handed out (and let go) from the first piece on
        while head:
            yield limits.count(head.pop())
        for piece in rest:
            yield limits.check(piece)
    except httpx.RequestError as exc:
        failure = exc
    except Exception as exc:  # a typed error already (too large, idle)
        stream._raw_end(exc)
        raise
    if failure is not None:
        error, cause = call.body_error(failure)
        stream._raw_end(error)
        raise error from cause
    stream._raw_end(limits.end())


async def aiter_raw_sse(stream: _RawAsync, call: Call, limit: int | None) -> AsyncIterator[bytes]:
    """`iter_raw_sse` for an async stream."""
    head, rest = stream._take_raw()
    limits = _Observer(stream._state, call, limit)
    failure: httpx.RequestError | None = None
    try:
        head.reverse()  # handed out (and let go) from the first piece on
        while head:
            yield limits.count(head.pop())
        async for piece in rest:
            yield limits.check(piece)
    except httpx.RequestError as exc:
        failure = exc
    except Exception as exc:
        await stream._raw_end(exc)
        raise
    if failure is not None:
        error, cause = call.body_error(failure)
        await stream._raw_end(error)
        raise error from cause
    await stream._raw_end(limits.end())


def _replayed(content: bytes, call: Call) -> Iterator[list[Any]]:
    """The chunks of a kept raw body, event by event (a line completes at most one), with the errors the stream
    would have raised: an error event, an event that is not a chunk, an end without ``[DONE]`` or a finish
    reason. Decoded by a state of its own, whose clock is never read: the stream's state saw these bytes as they
    arrived (its text, usage and metrics, and the hooks' one ``on_stream_end``, are from then)."""
    state = StreamState(0.0, secret=call.api_key, max_event_bytes=call.config.max_sse_event_bytes,
                        clock=lambda: 0.0, max_text_bytes=call.config.max_stream_text_bytes)
    for line in content.splitlines(keepends=True):
        yield state.feed(line)
        if state.overflow is not None:
            raise state.too_large()
        if state.done:
            return
    yield state.finish_stream()
    if not (state.done or state.finish):
        raise StreamInterruptedError(
            f"The stream's body (read() before parse()) ended after {state.chunks} chunks without [DONE] or a "
            "finish reason: it was cut off. The text so far is in .partial_text.", partial_text=state.partial_text)


def replay_sync(content: bytes, call: Call) -> Generator[Any, None, None]:
    """The events of a raw body ``read()`` whole (``content``), for `Stream` after the read."""
    for chunks in _replayed(content, call):
        yield from chunks


async def replay_async(content: bytes, call: Call) -> AsyncGenerator[Any, None]:
    """`replay_sync` for `AsyncStream` (the bytes are in memory: nothing is awaited)."""
    for chunks in _replayed(content, call):
        for chunk in chunks:
            yield chunk

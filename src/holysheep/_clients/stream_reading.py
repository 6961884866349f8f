"""The read loops under `Stream` and `AsyncStream`: pull decoded bytes, feed `StreamState`, and decide how a
stream ended (complete, interrupted, stalled, or nothing arrived so the call may be retried)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, NoReturn, TypeVar

import httpx

from holysheep._clients.stream_body import _drain_async, _drain_sync, _framed
from holysheep._core.hooks import StreamEndEvent
from holysheep._core.keys import redact
from holysheep._core.scrub import scrub_cause
from holysheep._core.stream_state import StreamState
from holysheep._exceptions import APIConnectionError, StreamIdleTimeoutError, StreamInterruptedError
from holysheep._transports.deadlines import IdleClock
from holysheep.types.chat import ChatCompletionChunk

if TYPE_CHECKING:
    from holysheep._core.call import Call

__all__ = ["iter_async", "iter_sync", "nothing_arrived", "report_end"]

_T = TypeVar("_T", bound=ChatCompletionChunk)


def _interrupted(state: StreamState, exc: Exception | None, call: Call, idle: float | None) -> APIConnectionError:
    state.mark_end()
    text = state.partial_text
    seen = f"after {state.chunks} chunks ({len(text)} characters)"
    if isinstance(exc, httpx.ReadTimeout) and idle is not None:
        return StreamIdleTimeoutError(
            f"The stream stalled: no progress for {idle:g} s (stream_idle_timeout; keep-alive events do not "
            f"count) {seen}. The text so far is in .partial_text; raise stream_idle_timeout if the model is slow "
            "to start.",
            partial_text=text)
    cause = redact(str(exc), call.api_key) if exc is not None else "the server closed it before [DONE]"
    return StreamInterruptedError(
        f"The stream was interrupted {seen}: {cause or type(exc).__name__}. The text so far is in "
        ".partial_text; it was not retried because part of the output had already arrived.",
        partial_text=text)


def _idle_error(idle: float) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(f"no server-sent event for {idle:g} s")


def nothing_arrived(state: StreamState, error: BaseException, call: Call) -> APIConnectionError | None:
    """A stream that ended (EOF or a transport error) before its first event: nothing was lost, so the call
    may be retried or sent to a fallback like a connection error. None for any other outcome."""
    if (state.chunks or state.done or not isinstance(error, StreamInterruptedError)
            or isinstance(error, StreamIdleTimeoutError)):
        return None
    cause = error.__cause__
    how = f"({redact(str(cause), call.api_key) or type(cause).__name__})" if cause is not None else "(EOF)"
    return APIConnectionError(
        f"The server answered HTTP 200 to {call.method} {call.url} but closed the stream before its first "
        f"event {how}: nothing arrived. This is retried like a connection error. If it persists, check the "
        "server's log (llama.cpp does this when the prompt is longer than the context).",
        request=error.request)


class _Watch:
    """What the sync and async read loops decide alike: the idle clock, whether the body ended complete, and
    the typed error for a transport failure."""

    def __init__(self, state: StreamState, call: Call) -> None:
        self.state, self.call, self.idle = state, call, call.idle_timeout
        self.clock = IdleClock(self.idle) if self.idle is not None else None

    def tick(self) -> None:
        """After a piece of body: no progress for ``idle`` seconds is a timeout (chunks that carry output, a finish
        reason or usage reset it; bytes, comments and keep-alive events with nothing in them do not)."""
        if self.clock is not None and self.clock.expired(self.state.progress):
            raise _idle_error(self.clock.idle)

    def check_complete(self) -> None:
        """At the end of the body: one without ``[DONE]`` or a finish reason was cut off."""
        if not (self.state.done or self.state.finish):
            raise _interrupted(self.state, None, self.call, self.idle)

    def fail(self, failure: httpx.RequestError) -> NoReturn:
        """Raise ``failure`` as the stream's typed error; call it outside the ``except`` block, so that no
        ``__context__`` keeps the raw request."""
        error = _interrupted(self.state, failure, self.call, self.idle)
        cause = scrub_cause(failure, self.call.api_key)
        if self.call.ctx is not None:
            report_end(self.call, self.state, error)
        raise error from cause


def report_end(call: Call, state: StreamState, error: BaseException | None) -> None:
    """Tell the call's hooks that its stream ended (``error``: its typed error; a ``GeneratorExit`` means the
    caller closed it early)."""
    ctx = call.ctx
    assert ctx is not None
    if state.reported:
        return
    state.reported = True
    closed = isinstance(error, GeneratorExit)
    ctx.stream_event("on_stream_end", StreamEndEvent(ctx, state, None if closed else error, closed))


def iter_sync(response: httpx.Response, state: StreamState, call: Call,
               chunks: Iterator[bytes]) -> Generator[_T, None, None]:
    """``chunks``: the decoded body (inflated in bounded pieces; the SSE decoder caps lines and events)."""
    failure: httpx.RequestError | None = None
    error: BaseException | None = None
    watch = _Watch(state, call)
    try:
        for data in chunks:
            yield from state.feed(data)  # type: ignore[misc]
            if state.overflow is not None:  # past the text cap, after the chunks that came before it
                raise state.too_large()
            if state.done:
                if _framed(response):
                    _drain_sync(chunks)
                return
            watch.tick()
        yield from state.finish_stream()  # type: ignore[misc]
        watch.check_complete()
    except httpx.RequestError as exc:
        failure = exc
    except BaseException as exc:  # the stream's typed error, or GeneratorExit when the caller closed it
        error = exc
        raise
    finally:
        state.mark_end()
        response.close()
        if failure is None and call.ctx is not None:
            report_end(call, state, error)
    if failure is not None:
        watch.fail(failure)


async def iter_async(response: httpx.Response, state: StreamState, call: Call,
                      chunks: AsyncIterator[bytes]) -> AsyncGenerator[_T, None]:
    failure: httpx.RequestError | None = None
    error: BaseException | None = None
    watch = _Watch(state, call)
    try:
        async for data in chunks:
            for chunk in state.feed(data):
                yield chunk  # type: ignore[misc]
            if state.overflow is not None:  # past the text cap, after the chunks that came before it
                raise state.too_large()
            if state.done:
                if _framed(response):
                    await _drain_async(chunks)
                return
            watch.tick()
        for chunk in state.finish_stream():
            yield chunk  # type: ignore[misc]
        watch.check_complete()
    except httpx.RequestError as exc:
        failure = exc
    except BaseException as exc:  # the stream's typed error, or GeneratorExit when the caller closed it
        error = exc
        raise
    finally:
        state.mark_end()
        if failure is None and call.ctx is not None:
            report_end(call, state, error)
        await response.aclose()
    if failure is not None:
        watch.fail(failure)



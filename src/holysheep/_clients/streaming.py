"""Sync and async chat streams: thin shells that pull bytes and hand them to `StreamState`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

import httpx

from holysheep._clients.stream_body import _Consumed, replay_async, replay_sync
from holysheep._clients.stream_reading import iter_async, iter_sync, nothing_arrived, report_end
from holysheep._core.closing import AsyncClosing, SyncClosing
from holysheep._core.hooks import StreamEvent
from holysheep._core.scrub import request_id_of
from holysheep._core.stream_state import StreamMetrics, StreamState
from holysheep._core.wire import wire_of
from holysheep._exceptions import (
    APIConnectionError,
    ResponseConsumedError,
)
from holysheep._transports.body import aiter_decoded, iter_decoded
from holysheep._transports.lazy_body import AsyncTap, Tap
from holysheep.types.chat import ChatCompletion

if TYPE_CHECKING:
    from holysheep._core.call import Call

__all__ = ["AsyncStream", "Stream"]

_T = TypeVar("_T")  # a chat chunk, or the event of another wire format (a Responses API event)


class _StreamBase(Generic[_T]):
    def __init__(self, response: httpx.Response, call: Call) -> None:
        self.response = response
        self._call = call
        self._state: StreamState = wire_of(call.spec).stream_state(  # the format decodes its own events
            call.started_at, secret=call.api_key, max_event_bytes=call.config.max_sse_event_bytes,
            clock=call.config.clock, max_text_bytes=call.config.max_stream_text_bytes)
        self._head: list[_T] = []  # the first chunk, read by _prime before the stream is handed out
        self._head_error: BaseException | None = None
        self._released = False  # closed by the caller (or after its raw body was read)
        self._raw_taken = False  # the caller reads the raw body instead (with_streaming_response)
        self._had_head = False  # the first chunk was read before the hand-over (popping it starts the events)
        self._prime_error: BaseException | None = None  # reading up to the first event failed

    def _raw_check(self, started: bool) -> None:
        """Raise unless the raw body can still be handed out: ``started`` when the events were iterated."""
        if self._raw_taken or self._released or started:
            raise ResponseConsumedError(
                "This stream=True response's body was already read: its events were iterated (through parse()), "
                "or its raw body was read (read()/iter_bytes()/iter_text()/iter_lines()), or it was closed. "
                "Use one or the other: parse() for the events, or the raw methods for the server's bytes.")
        if self._prime_error is not None:  # the first event failed (the connection is closed): say so
            self._head_error = None
            raise self._prime_error
        self._raw_taken = True

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id``."""
        return request_id_of(self.response.headers, self._call.api_key)

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

    def _first_chunk(self) -> None:
        ctx = self._call.ctx
        assert ctx is not None
        at = self._state.first_at  # when it was decoded: one read may also have brought (and ended) the rest
        ctx.stream_event("on_stream_first_chunk", StreamEvent(ctx, self._head[0], ctx.clock() if at is None else at))

    def _final(self) -> ChatCompletion:
        completion = self._state.final_completion()
        completion._update_transport(request_id=self.request_id, retries_taken=self._call.retries_taken,
                                     served_by=self._call.served_by)
        return completion


class Stream(SyncClosing, _StreamBase[_T]):
    """A streamed chat completion: iterate for chunks; use ``with`` so the connection is released."""

    def __init__(self, response: httpx.Response, call: Call) -> None:
        super().__init__(response, call)
        # with_streaming_response: the bytes read before the stream is handed over are kept, for a caller who
        # reads the raw body instead of the events
        self._tap = Tap(iter_decoded(response), call.config.max_response_bytes) if call.spec.raw == "stream" else None
        # The generator must not reference ``self``: then dropping an unfinished stream frees it at once
        # (no reference cycle), and the generator's ``finally`` releases the connection.
        self._iterator: Generator[_T, None, None] | _Consumed = iter_sync(
            response, self._state, call, self._tap if self._tap is not None else iter_decoded(response))
        self._raw_gen: Generator[_T, None, None] | None = None

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        if self._head:
            return self._head.pop()
        if self._head_error is not None:
            error, self._head_error = self._head_error, None
            raise error
        return next(self._iterator)

    def _prime(self) -> APIConnectionError | None:
        """Read up to the first event now. Returns the retryable error when the stream ended before any
        event arrived (then the connection is closed); any other failure is raised on first iteration."""
        try:
            return self._prime_head()
        finally:
            if self._tap is not None:
                self._tap.recording = False
                self._had_head, self._prime_error = bool(self._head), self._head_error

    def _prime_head(self) -> APIConnectionError | None:
        try:
            self._head.append(next(self._iterator))
            if self._call.ctx is not None:
                self._first_chunk()
        except StopIteration:
            pass
        except Exception as exc:
            empty = nothing_arrived(self._state, exc, self._call)
            if empty is not None:
                self.close()
                return empty
            self._head_error = exc
        return None

    def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        self._released = True
        self._iterator.close()
        if self._raw_gen is not None:
            self._raw_gen.close()
        self.response.close()

    def _take_raw(self) -> tuple[list[bytes], Iterator[bytes]]:
        """Hand the raw body over (what was read before the hand-over, and the rest): the events are then
        gone (iterating raises `ResponseConsumedError`)."""
        iterator, tap = self._iterator, self._tap
        assert tap is not None
        self._raw_check(tap.later > 0 or (self._had_head and not self._head))
        assert not isinstance(iterator, _Consumed)
        self._raw_gen, self._iterator = iterator, _Consumed()
        self._head.clear()
        head, tap.head = tap.head, []
        return head, tap

    def _raw_end(self, error: BaseException | None) -> None:
        """The raw body was read to its end (``error`` None) or failed: tell the hooks, release the connection."""
        self._state.mark_end()
        if self._call.ctx is not None:
            report_end(self._call, self._state, error)
        self.close()

    def _replay(self, content: bytes) -> None:
        """The raw body was read whole and kept (``read()``): the events are decoded from ``content``."""
        self._iterator = replay_sync(content, self._call)

    def until_done(self) -> Stream[_T]:
        """Read the rest of the stream."""
        for _ in self:
            pass
        return self

    def get_final_completion(self) -> ChatCompletion:
        """Read to the end, then return the chunks folded into one `ChatCompletion`."""
        self.until_done()
        return self._final()


class AsyncStream(AsyncClosing, _StreamBase[_T]):
    """An async streamed chat completion: ``async for`` the chunks inside ``async with``."""

    def __init__(self, response: httpx.Response, call: Call) -> None:
        super().__init__(response, call)
        self._tap = (AsyncTap(aiter_decoded(response), call.config.max_response_bytes) if call.spec.raw == "stream"
                     else None)
        self._iterator: AsyncGenerator[_T, None] | _Consumed = iter_async(
            response, self._state, call, self._tap if self._tap is not None else aiter_decoded(response))
        self._raw_gen: AsyncGenerator[_T, None] | None = None

    def __aiter__(self) -> AsyncStream[_T]:
        return self

    async def __anext__(self) -> _T:
        if self._head:
            return self._head.pop()
        if self._head_error is not None:
            error, self._head_error = self._head_error, None
            raise error
        return await self._iterator.__anext__()

    async def _prime(self) -> APIConnectionError | None:
        """Read up to the first event now (see ``Stream._prime``)."""
        try:
            return await self._prime_head()
        finally:
            if self._tap is not None:
                self._tap.recording = False
                self._had_head, self._prime_error = bool(self._head), self._head_error

    async def _prime_head(self) -> APIConnectionError | None:
        try:
            self._head.append(await self._iterator.__anext__())
            if self._call.ctx is not None:
                self._first_chunk()
        except StopAsyncIteration:
            pass
        except Exception as exc:
            empty = nothing_arrived(self._state, exc, self._call)
            if empty is not None:
                await self.close()
                return empty
            self._head_error = exc
        return None

    async def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        self._released = True
        await self._iterator.aclose()
        if self._raw_gen is not None:
            await self._raw_gen.aclose()
        await self.response.aclose()

    def _take_raw(self) -> tuple[list[bytes], AsyncIterator[bytes]]:
        """`Stream._take_raw` for an async stream."""
        iterator, tap = self._iterator, self._tap
        assert tap is not None
        self._raw_check(tap.later > 0 or (self._had_head and not self._head))
        assert not isinstance(iterator, _Consumed)
        self._raw_gen, self._iterator = iterator, _Consumed()
        self._head.clear()
        head, tap.head = tap.head, []
        return head, tap

    async def _raw_end(self, error: BaseException | None) -> None:
        """`Stream._raw_end` for an async stream."""
        self._state.mark_end()
        if self._call.ctx is not None:
            report_end(self._call, self._state, error)
        await self.close()

    def _replay(self, content: bytes) -> None:
        """`Stream._replay` for an async stream."""
        self._iterator = replay_async(content, self._call)

    async def until_done(self) -> AsyncStream[_T]:
        """Read the rest of the stream."""
        async for _ in self:
            pass
        return self

    async def get_final_completion(self) -> ChatCompletion:
        """Read to the end, then return the chunks folded into one `ChatCompletion`."""
        await self.until_done()
        return self._final()

"""A body handed over unread (``with_streaming_response``), read as the caller pulls it, with the same bounds as
a body read up front: at most ``max_response_bytes`` decoded bytes (compressed bodies inflate 64 KiB at a time)
and what is left of the attempt's deadline (`ReadBudget`: the server's time, not the caller's)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from holysheep._transports.body import BoundedDecoder, _check_in_memory, _in_memory, too_large
from holysheep._transports.deadlines import ReadBudget, within_deadline
from holysheep._transports.sync_deadline import attempt_deadline

__all__ = ["AsyncTap", "Tap", "aiter_body", "iter_body"]


class _Counter:
    __slots__ = ("limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0

    def add(self, piece: bytes) -> bytes:
        self.total += len(piece)
        if self.total > self.limit:
            raise too_large(self.limit)
        return piece


class _Recording:
    """What `Tap` and `AsyncTap` share: the pieces kept in ``head`` (at most ``limit`` bytes: past it,
    `ResponseTooLargeError`) while ``recording``, and ``later``, the reads asked for after the hand-over."""

    __slots__ = ("_size", "head", "later", "limit", "recording")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head: list[bytes] = []
        self.recording = True
        self.later = 0
        self._size = 0

    def keep(self, data: bytes) -> bytes:
        self._size += len(data)
        if self._size > self.limit:
            self.head.clear()
            raise too_large(self.limit)
        self.head.append(data)
        return data


class Tap(_Recording):
    """The decoded pieces of a stream's body, passed on one by one; while ``recording`` (until the stream is
    handed over) each is also kept in ``head``, so that a caller who reads the raw body instead of the events
    (``with_streaming_response``) gets it from its first byte. ``head`` never holds more than ``limit`` bytes:
    past it, `ResponseTooLargeError`. ``later``: reads asked for after the hand-over (by the events or the raw
    body: then the other cannot have the body whole)."""

    __slots__ = ("source",)

    def __init__(self, source: Iterator[bytes], limit: int) -> None:
        super().__init__(limit)
        self.source = source

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if not self.recording:
            self.later += 1
            return next(self.source)
        return self.keep(next(self.source))


class AsyncTap(_Recording):
    """`Tap` for an async body."""

    __slots__ = ("source",)

    def __init__(self, source: AsyncIterator[bytes], limit: int) -> None:
        super().__init__(limit)
        self.source = source

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if not self.recording:
            self.later += 1
            return await self.source.__anext__()
        return self.keep(await self.source.__anext__())


def iter_body(response: httpx.Response, limit: int, budget: ReadBudget) -> Iterator[bytes]:
    """The decoded body of a streamed httpx response, piece by piece as the caller asks. Raises
    `ResponseTooLargeError` once more than ``limit`` bytes have come, ``httpx.ReadTimeout`` once the server has
    used up ``budget`` (every socket read of the SDK's own pool waits at most what is left), and the transport's
    ``httpx.RequestError``; always closes the response (at the end, on an error, or when the caller stops)."""
    try:
        if _in_memory(response):  # a test double's response, built already read
            _check_in_memory(response, limit)
            if response.content:
                yield response.content
            return
        decoder = BoundedDecoder(response.headers.get("content-encoding"))
        count = _Counter(limit)
        raw = response.iter_raw()
        while True:
            failure: httpx.ReadTimeout | None = None
            with attempt_deadline(budget.begin()):
                try:
                    data = next(raw, None)
                except httpx.ReadTimeout:
                    ran_out = budget.timed_out()  # the deadline, not httpx's per-read timeout: say so
                    if ran_out is None:
                        raise
                    failure = ran_out
            if failure is not None:
                raise failure
            if data is None:
                break
            budget.end()
            for piece in decoder.decode(data):
                yield count.add(piece)
        for piece in decoder.flush():
            yield count.add(piece)
    finally:
        response.close()


async def aiter_body(response: httpx.Response, limit: int, budget: ReadBudget) -> AsyncIterator[bytes]:
    """`iter_body` for an async httpx response (also the aiohttp backend's): each read is abandoned (and the
    connection closed) when it would take longer than what is left of ``budget``."""
    try:
        if _in_memory(response):
            _check_in_memory(response, limit)
            if response.content:
                yield response.content
            return
        decoder = BoundedDecoder(response.headers.get("content-encoding"))
        count = _Counter(limit)
        raw = response.aiter_raw()
        while True:
            try:
                data = await within_deadline(raw.__anext__(), budget.begin(), budget.seconds)
            except StopAsyncIteration:
                break
            budget.end()
            for piece in decoder.decode(data):
                yield count.add(piece)
        for piece in decoder.flush():
            yield count.add(piece)
    finally:
        await response.aclose()

"""The items a batch sends next: retries first, then fresh inputs read lazily with bounded read-ahead.

``WorkQueue`` owns the input iterator, the queue of retries ready to go, the retries still in their
backoff, and the two counters the batch ends on: items not finished yet, and results not yet taken
by the consumer (which bounds the read-ahead). Several workers take from it: a waiting worker is woken
once per item that becomes available (all of them once the batch is over), and one at a time reads an
async input.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from holysheep._core.wire import WireFormat
from holysheep._engine.requests import BatchRequest, normalize_item
from holysheep._engine.waiters import wake_first

__all__ = ["END", "WAIT", "WorkQueue"]

END: Any = object()
"""Marks the end of the input, and of the results on the output queue."""
WAIT: Any = object()
"""``next_now``: nothing can be had without waiting."""


class WorkQueue:
    """Retries first, then fresh inputs (at most ``read_ahead`` read and not yet taken by the consumer)."""

    def __init__(self, requests: Iterable[object] | AsyncIterable[object], defaults: Mapping[str, object],
                 read_ahead: int, wire: WireFormat | None = None) -> None:
        self._wire = wire
        self._ait: AsyncIterator[object] | None = None
        self._it: Iterator[object] | None = None
        if isinstance(requests, AsyncIterable):
            self._ait = aiter(requests)
        else:
            self._it = iter(requests)
        self._defaults = dict(defaults)
        self._read_ahead = read_ahead
        self._ready: deque[BatchRequest] = deque()
        self._backoff: dict[int, tuple[BatchRequest, asyncio.TimerHandle]] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._reading = False  # a worker is awaiting the async input
        self.exhausted = False
        self.read_count = 0
        """How many inputs have been read so far."""
        self.unfinished = 0
        """Items read and not finished yet."""
        self.in_memory = 0
        """Items read whose result the consumer has not taken yet."""

    async def _read(self) -> object:
        if self._ait is None:
            assert self._it is not None
            return next(self._it, END)
        self._reading = True
        try:
            return await anext(self._ait, END)
        finally:
            self._reading = False
            self._wake_one()

    def next_now(self) -> Any:
        """The next item when it can be had without waiting (a retry, or a fresh item of a plain iterable);
        None once every item is finished; ``WAIT`` when the worker must ``await next()``."""
        if self._ready:
            return self._ready.popleft()
        if self._it is not None and not self.exhausted and self.in_memory < self._read_ahead:
            raw = next(self._it, END)
            if raw is not END:
                return self._admit_read(raw)
            self.exhausted = True
            self._wake_all()
        if self.exhausted and self.unfinished == 0:
            return None
        return WAIT

    async def next(self) -> BatchRequest | None:
        """The next item to send; None once every item is finished. Waits while the read-ahead is full."""
        while True:
            if self._ready:
                return self._ready.popleft()
            if not self.exhausted and self.in_memory < self._read_ahead and not self._reading:
                raw = await self._read()
                if raw is END:
                    self.exhausted = True
                    self._wake_all()
                    continue
                return self._admit_read(raw)
            if self.exhausted and self.unfinished == 0:
                return None
            await self._wait()

    def _admit_read(self, raw: object) -> BatchRequest:
        index = self.read_count
        self.read_count += 1
        self.unfinished += 1
        self.in_memory += 1
        if isinstance(raw, BatchRequest):
            return raw
        return normalize_item(raw, index, self._defaults, where=None, wire=self._wire)

    async def _wait(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def _wake_one(self) -> None:
        wake_first(self._waiters)

    def _wake_all(self) -> None:
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def retry_now(self, item: BatchRequest) -> None:
        """Queue ``item`` to be sent again ahead of fresh inputs."""
        self._ready.append(item)
        self._wake_one()

    def retry_later(self, item: BatchRequest, delay: float) -> None:
        """Queue ``item`` again after ``delay`` seconds (its backoff)."""
        handle = asyncio.get_running_loop().call_later(delay, self._backoff_over, item)
        self._backoff[item.index] = (item, handle)

    def _backoff_over(self, item: BatchRequest) -> None:
        self._backoff.pop(item.index, None)
        self.retry_now(item)

    def item_finished(self) -> None:
        """One item ended with its result."""
        self.unfinished -= 1
        if self.exhausted and self.unfinished == 0:
            self._wake_all()

    def result_taken(self) -> None:
        """The consumer took one result: room for one more read-ahead item."""
        self.in_memory -= 1
        self._wake_one()

    def end_backoffs(self) -> None:
        """Send every item still in its backoff now (the batch stopped: they end at once)."""
        for item, handle in self._backoff.values():
            handle.cancel()
            self._ready.append(item)
        self._backoff.clear()
        self._wake_all()

    def cancel_backoffs(self) -> None:
        """Drop the backoff timers (the batch was closed)."""
        for _, handle in self._backoff.values():
            handle.cancel()
        self._backoff.clear()

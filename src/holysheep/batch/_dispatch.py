"""The dispatcher loop: read inputs lazily (bounded read-ahead), wait for the limits, start attempts.

``Dispatcher`` is the scheduling part of ``holysheep.batch.BatchIterator``: one task that
takes retries first, then fresh inputs, and waits for the pause gate, a concurrency slot and the RPM/TPM
buckets before it starts one task per attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ._attempts import AttemptHandler
from ._limits import TokenBucket
from ._requests import BatchRequest, normalize_item

__all__ = ["END", "Dispatcher"]

END: Any = object()
"""Marks the end of the input, and of the results on the output queue."""


class Dispatcher(AttemptHandler):
    """The scheduling loop over the inputs (state is set by ``BatchIterator``)."""

    _defaults: dict[str, Any]
    _ait: AsyncIterator[Any] | None
    _it: Iterator[Any] | None
    _rpm: TokenBucket | None
    _read_ahead: int
    _tasks: set[asyncio.Task[None]]
    _in_memory: int
    _exhausted: bool
    read_count: int

    def _read(self) -> Any:
        if self._it is not None:
            return next(self._it, END)
        return END

    async def _next_item(self) -> BatchRequest | None:
        assert self._wake is not None
        while True:
            if self._retry_ready:
                return self._retry_ready.popleft()
            if not self._exhausted and self._in_memory < self._read_ahead:
                raw = self._read() if self._ait is None else await anext(self._ait, END)
                if raw is END:
                    self._exhausted = True
                    continue
                index = self.read_count
                self.read_count += 1
                self._unfinished += 1
                self._in_memory += 1
                if isinstance(raw, BatchRequest):
                    return raw
                return normalize_item(raw, index, self._defaults, where=f"item {index}: ")
            if self._exhausted and self._unfinished == 0:
                return None
            self._wake.clear()
            await self._wake.wait()

    async def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                item = await self._next_item()
                if item is None:
                    break
                if item.invalid is not None:
                    self._finalize(item, None, item.invalid)
                    continue
                if self._abort is None:
                    await self._gate.wait()
                    await self._limiter.acquire()
                    charge = 0
                    if self._rpm is not None:
                        await self._rpm.take(1)
                    if self._tpm is not None:
                        charge = self._estimator.estimate(item.est_tokens)
                        await self._tpm.take(charge)
                    outage = self._outage.check()
                    if outage is not None:
                        self._stop_unfinished(outage, None)
                    if self._abort is None:
                        task = loop.create_task(self._attempt(item, charge))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                        if self._probe is not None:  # rpm/tpm="auto": learn the limits from one reply first
                            await self._probe.wait()
                        continue
                    self._limiter.release()
                assert self._abort is not None
                self._finalize(item, None, self._unfinished_error(None))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the input iterable failed: hand its error to the consumer
            self._out.put_nowait(exc)
            return
        self._out.put_nowait(END)

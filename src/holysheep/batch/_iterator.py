"""The async batch engine: bounded, rate-limited, order-tagged dispatch with batch-wide retries.

One dispatcher task (``._dispatch``) reads inputs lazily (bounded read-ahead), waits for the pause
gate, a concurrency slot and the RPM/TPM buckets, and starts one task per attempt (``._attempts``).
Every input ends as exactly one ``BatchResult``, delivered through ``BatchIterator`` as it
completes. This module holds that public iterator: setup, the consumer side and the quota check.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from .._exceptions import APIError, AuthenticationError, QuotaExceededError
from .._sender import Sender
from ._dispatch import END, Dispatcher
from ._limits import (
    AIMDLimiter,
    Clock,
    OutageDetector,
    PauseGate,
    RetryPace,
    Sleep,
    TokenBucket,
    TokenEstimator,
)
from ._options import BatchOptions, OnResult
from ._results import BatchResult, BatchStats

__all__ = ["BatchIterator", "BatchOptions"]

logger = logging.getLogger("holysheep.batch")


class BatchIterator(Dispatcher, AsyncIterator[BatchResult]):
    """Results of a running batch as they complete (``async for``); each carries its input ``index``.

    Use ``async with`` (or call ``aclose``) when you may stop early: closing cancels what is in
    flight. Reading the input is lazy with bounded read-ahead, so any (async) iterable works.
    """

    def __init__(
        self,
        sender: Sender,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        defaults: Mapping[str, Any] | None = None,
        options: BatchOptions | None = None,
        estimated_tokens: int | None = None,
        total: int | None = None,
        on_result: OnResult | None = None,
        on_progress: Callable[[BatchStats], None] | None = None,
        progress: Any = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        opts = self.options = options or BatchOptions()
        self._sender = sender
        self._defaults = dict(defaults or {})
        if isinstance(requests, AsyncIterable):
            self._ait = aiter(requests)
            self._it = None
        else:
            self._ait, self._it = None, iter(requests)
        self._estimated = estimated_tokens
        self._on_result, self._on_progress, self._progress = on_result, on_progress, progress
        self.stats = BatchStats(total=total, concurrency_max=opts.concurrency)
        self._limiter = AIMDLimiter(opts.concurrency, adaptive=opts.adaptive)
        self._clock, self._sleep = clock, sleep
        self._rpm = self._bucket(opts.rpm)
        self._tpm = self._bucket(opts.tpm)
        self._auto = opts.rpm == "auto" or opts.tpm == "auto"
        self._probe: asyncio.Event | None = None  # auto: the first response's headers come before the rest
        self._gate = PauseGate(clock=clock, sleep=sleep)
        self._pace = RetryPace(opts.retry_budget, clock=clock)
        self._outage = OutageDetector(no_success_s=opts.outage_after_s, failure_ratio=opts.outage_failure_ratio,
                                      window=opts.outage_window, clock=clock)
        self._estimator = TokenEstimator()
        self._read_ahead = opts.read_ahead or max(2 * opts.concurrency + 64, 128)
        self._out = asyncio.Queue()
        self._retry_ready = deque()
        self._backoff = {}
        self._tasks = set()
        self._wake = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._abort = None
        self._unfinished = 0
        self._in_memory = 0
        self._exhausted = False
        self._closed = False
        self.read_count = 0
        """How many inputs have been read so far."""

    # ------------------------------------------------------------------ consumer side
    def __aiter__(self) -> BatchIterator:
        return self

    async def __anext__(self) -> BatchResult:
        if self._closed:
            raise StopAsyncIteration
        if self._dispatcher is None:
            await self._start()
        item = await self._out.get()
        if item is END:
            self._finish()
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            await self.aclose()
            raise item
        self._in_memory -= 1
        self._poke()
        if self._on_result is not None:
            self._on_result(item)
        if self._on_progress is not None:
            self._on_progress(self.stats)
        if self._progress is not None:
            self._progress.update(self.stats)
        result: BatchResult = item
        return result

    async def __aenter__(self) -> BatchIterator:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop dispatching and cancel requests in flight (results already delivered stay valid)."""
        if self._closed:
            return
        self._closed = True
        tasks = [t for t in (self._dispatcher, *self._tasks) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        for _, handle in self._backoff.values():
            handle.cancel()
        self._backoff.clear()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._finish()

    def _finish(self) -> None:
        self._closed = True
        self._sync_stats()
        if self.stats.finished_at is None:
            self.stats.finished_at = time.monotonic()
        if self._progress is not None:
            progress, self._progress = self._progress, None
            progress.close(self.stats)

    def _bucket(self, limit: float | str | None) -> TokenBucket | None:
        if limit is None or isinstance(limit, str):
            return None
        return TokenBucket.per_minute(limit, clock=self._clock, sleep=self._sleep)

    async def _start(self) -> None:
        self._wake = asyncio.Event()
        if self._auto:
            self._probe = asyncio.Event()
        self.stats.started_at = time.monotonic()
        if self._progress is not None:
            self._progress.start(self.stats)
        if self.options.check_quota:
            try:
                await self._check_quota()
            except BaseException:
                self._finish()
                raise
        self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())

    async def _check_quota(self) -> None:
        try:
            info = await self._sender.quota()
        except AuthenticationError as exc:
            self._stop(exc, "authentication failed (HTTP 401)")
            return
        except APIError as exc:
            logger.debug("quota check skipped: %s", exc)
            return
        remaining = getattr(info, "remaining", None)
        unit = getattr(info, "unit", None)
        if remaining is None or (unit not in (None, "tokens")):
            return
        if remaining <= 0 or (self._estimated is not None and self._estimated > remaining):
            need = f"about {self._estimated:,} tokens" if self._estimated is not None else "tokens"
            msg = (f"The batch needs {need} (prompt chars/4 + max_tokens) but the account has {remaining:,.0f} "
                   "left; it may stop part-way with insufficient_quota.")
            if self.options.require_quota:
                raise QuotaExceededError(msg + " (require_quota=True: nothing was sent.)")
            logger.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)

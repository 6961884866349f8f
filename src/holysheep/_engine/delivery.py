"""Where finished items go: each becomes one ``BatchResult`` on the consumer's queue, counted in the stats."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from holysheep._core.hooks import BatchContext, BatchItemEvent
from holysheep._core.wire import wire_of_response
from holysheep._engine.admission import Admission
from holysheep._engine.requests import BatchRequest
from holysheep._engine.results import BatchResult, BatchStats
from holysheep._engine.spend import Pricer
from holysheep._engine.waiters import wake_first
from holysheep._engine.work_queue import WorkQueue

__all__ = ["EMPTY", "ResultChannel", "ResultSink"]

EMPTY: Any = object()
"""``ResultChannel.get_nowait``: nothing to take yet."""


class ResultChannel:
    """The FIFO from the workers to the consumer: ``put_nowait`` never waits, ``get`` waits only while it is
    empty. What ``asyncio.Queue`` does here, at a fraction of its calls per item (it has no size bound, no
    ``task_done`` and no ``join``)."""

    __slots__ = ("_items", "_waiters")

    def __init__(self) -> None:
        self._items: deque[object] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def put_nowait(self, item: object) -> None:
        """Append ``item`` and wake the longest-waiting getter, if any."""
        self._items.append(item)
        if self._waiters:
            self._wake_next()

    def get_nowait(self) -> Any:
        """The oldest item, or ``EMPTY``."""
        return self._items.popleft() if self._items else EMPTY

    async def get(self) -> Any:
        """The oldest item, waiting for one if need be."""
        items = self._items
        while not items:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled() and items:
                    self._wake_next()  # woken, then cancelled: the item goes to the next getter
                raise
        return items.popleft()

    def _wake_next(self) -> None:
        wake_first(self._waiters)  # a cancelled getter is skipped


class ResultSink:
    """Turns every finished item into exactly one ``BatchResult`` on ``out`` and keeps ``stats`` current."""

    def __init__(self, stats: BatchStats, queue: WorkQueue, admission: Admission, *,
                 pricer: Pricer | None = None) -> None:
        self.stats = stats
        self._pricer = pricer
        self.out = ResultChannel()
        self._queue = queue
        self._admission = admission
        self._usage: dict[str, list[int]] = {}  # model -> [prompt, completion, cached] tokens; priced on read
        self.batch_ctx: BatchContext | None = None  # the batch as hooks see it (None without hooks)

    def finalize(self, item: BatchRequest, response: Any, error: BaseException | None) -> None:
        """End ``item`` with its response or its error."""
        latency = time.perf_counter() - item.first_sent if item.first_sent is not None else 0.0
        result = BatchResult(item.index, item.custom_id, response, error, item.attempts, latency, item.tool_run)
        stats = self.stats
        stats.done += 1
        if error is None:
            stats.succeeded += 1
        else:
            stats.failed += 1
            stats.errors[type(error).__name__] += 1
        self._queue.item_finished()
        self.out.put_nowait(result)
        if self.batch_ctx is not None:
            self.batch_ctx.hooks.emit("on_batch_item", BatchItemEvent(self.batch_ctx, result))

    def finalize_cached(self, item: BatchRequest, response: object) -> None:
        """End ``item`` with a response from the cache: a success with no request, no tokens and no cost
        (what it cost when it was fetched is counted as the saving)."""
        stats = self.stats
        stats.cached += 1
        wire = wire_of_response(response)
        usage = wire.usage(response) if wire is not None else None
        if wire is not None and usage is not None:
            price = self._price(wire.model_of(response), usage.input, usage.output, usage.cached)
            stats.cache_saved_usd += price or 0.0
        self.finalize(item, response, None)

    def _price(self, model: str, prompt: int, completion: int, cached: int) -> float | None:
        if self._pricer is not None:
            return self._pricer.cost(model, prompt, completion, cached)
        from holysheep.pricing._cost import completion_cost  # lazy: the price catalog loads when a reply has usage

        try:
            return completion_cost(model, prompt, completion, cached)
        except Exception:  # the price catalog is optional
            return None

    def count_usage(self, response: object) -> int:
        """Add a reply's tokens (as its wire format reads them) to the stats; its total tokens (0 when it has no
        usage). The cost is worked out from the sums per model when the stats are read (the price is linear in
        tokens)."""
        wire = wire_of_response(response)
        usage = wire.usage(response) if wire is not None else None
        if wire is None or usage is None:
            return 0
        stats = self.stats
        prompt, completion, cached = usage.input, usage.output, usage.cached
        stats.add_tokens(prompt, completion)
        model = wire.model_of(response)
        sums = self._usage.get(model)
        if sums is None:
            sums = self._usage[model] = [0, 0, 0]
        if prompt > 0:  # each reply's counts clamped as ModelPrice.cost clamps them
            sums[0] += prompt
            if cached > 0:
                sums[2] += cached if cached < prompt else prompt
        if completion > 0:
            sums[1] += completion
        return usage.total or prompt + completion

    def sync_stats(self) -> None:
        """Bring the stats up to date: the load-control figures and the cost so far."""
        self._admission.fill(self.stats)
        if not self._usage:
            return
        cost, known = 0.0, False
        for model, (prompt, completion, cached) in self._usage.items():
            price = self._price(model, prompt, completion, cached)
            if price is not None:
                cost, known = cost + price, True
        self.stats.cost_usd, self.stats.cost_known = cost, known

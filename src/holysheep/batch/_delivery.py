"""Where finished items go: each becomes one ``BatchResult`` on the consumer's queue, counted in the stats."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..types.chat import ChatCompletion
from ._admission import Admission
from ._requests import BatchRequest
from ._results import BatchResult, BatchStats
from ._work_queue import WorkQueue

__all__ = ["ResultSink"]


class ResultSink:
    """Turns every finished item into exactly one ``BatchResult`` on ``out`` and keeps ``stats`` current."""

    def __init__(self, stats: BatchStats, queue: WorkQueue, admission: Admission) -> None:
        self.stats = stats
        self.out: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue
        self._admission = admission

    def finalize(self, item: BatchRequest, response: ChatCompletion | None, error: BaseException | None) -> None:
        """End ``item`` with its response or its error."""
        latency = time.perf_counter() - item.first_sent if item.first_sent is not None else 0.0
        result = BatchResult(item.index, item.custom_id, response, error, item.attempts, latency)
        stats = self.stats
        stats.done += 1
        if error is None:
            stats.succeeded += 1
        else:
            stats.failed += 1
            stats.errors[type(error).__name__] += 1
        self.sync_stats()
        self._queue.item_finished()
        self.out.put_nowait(result)

    def count_usage(self, response: ChatCompletion) -> int:
        """Add a reply's tokens and cost to the stats; its total tokens (0 when it has no usage)."""
        stats = self.stats
        usage = response.usage
        actual = 0
        if usage is not None:
            stats.prompt_tokens += usage.prompt_tokens
            stats.completion_tokens += usage.completion_tokens
            actual = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        try:
            cost = response.cost
        except Exception:  # the price catalog is optional
            cost = None
        if cost is not None:
            stats.cost_usd += cost
            stats.cost_known = True
        return actual

    def sync_stats(self) -> None:
        """Copy the load-control figures into the stats."""
        self._admission.fill(self.stats)

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
        self._usage: dict[str, list[int]] = {}  # model -> [prompt, completion, cached] tokens; priced on read

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
        self._queue.item_finished()
        self.out.put_nowait(result)

    def count_usage(self, response: ChatCompletion) -> int:
        """Add a reply's tokens to the stats; its total tokens (0 when it has no usage). The cost is worked
        out from the sums per model when the stats are read (the price is linear in tokens)."""
        usage = response.usage
        if usage is None:
            return 0
        stats = self.stats
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        stats.prompt_tokens += prompt
        stats.completion_tokens += completion
        details = usage.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details is not None else 0
        sums = self._usage.get(response.model)
        if sums is None:
            sums = self._usage[response.model] = [0, 0, 0]
        if prompt > 0:  # each reply's counts clamped as ModelPrice.cost clamps them
            sums[0] += prompt
            if cached > 0:
                sums[2] += cached if cached < prompt else prompt
        if completion > 0:
            sums[1] += completion
        return usage.total_tokens or prompt + completion

    def sync_stats(self) -> None:
        """Bring the stats up to date: the load-control figures and the cost so far."""
        self._admission.fill(self.stats)
        if not self._usage:
            return
        from ..pricing._cost import completion_cost  # lazy: the price catalog loads when a reply has usage

        cost, known = 0.0, False
        for model, (prompt, completion, cached) in self._usage.items():
            try:
                price = completion_cost(model, prompt, completion, cached)
            except Exception:  # the price catalog is optional
                price = None
            if price is not None:
                cost, known = cost + price, True
        self.stats.cost_usd, self.stats.cost_known = cost, known

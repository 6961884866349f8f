"""The async batch engine's public face: ``BatchIterator`` wires its parts and runs the dispatch loop.

The parts, each with its own state:

- ``WorkQueue`` (``work_queue``): retries first, then fresh inputs read lazily with bounded read-ahead;
- ``Admission`` (``admission``): the pause gate, concurrency slots and RPM/TPM buckets an item waits for;
- ``AttemptRunner`` (``attempts``): sends one attempt through the client's sender and settles it
  (``concurrency`` workers each take an item, get it admitted and send it, then take the next: a reply is
  followed by the next request at once, as in a plain worker pool); its ``ItemPlanner`` (``item_plans``)
  makes each item's next request and steps its re-ask or tool loop;
- ``ResultSink`` (``delivery``): every input ends as exactly one ``BatchResult``, delivered as it completes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic

from holysheep._core.closing import AsyncClosing
from holysheep._core.hooks import BatchContext, BatchEvent, active_hooks
from holysheep._core.wire import WireFormat
from holysheep._engine.admission import Admission
from holysheep._engine.attempts import AttemptRunner
from holysheep._engine.client_budget import ClientBudget
from holysheep._engine.delivery import EMPTY, ResultSink
from holysheep._engine.gc_scope import GCScope
from holysheep._engine.limits import Clock, OutageDetector, Sleep
from holysheep._engine.options import BatchOptions, OnResult
from holysheep._engine.quota_check import check_quota
from holysheep._engine.results import BatchResult, BatchStats, ReplyT, ToolRunT
from holysheep._engine.sender import Sender
from holysheep._engine.server_limits import limits_scope
from holysheep._engine.spend import Pricer, SpendCap
from holysheep._engine.work_queue import END, WAIT, WorkQueue

if TYPE_CHECKING:
    from holysheep.cache import ResponseCache

__all__ = ["BatchIterator", "BatchOptions"]


class BatchIterator(AsyncClosing, AsyncIterator[BatchResult[ReplyT, ToolRunT]], Generic[ReplyT, ToolRunT]):
    """Results of a running batch as they complete (``async for``); each carries its input ``index``.
    Generic as `BatchResult` (plain ``BatchIterator``: chat completions results).

    Use ``async with`` (or call ``aclose``) when you may stop early: closing cancels what is in
    flight. Reading the input is lazy with bounded read-ahead, so any (async) iterable works.
    """

    def __init__(
        self,
        sender: Sender,
        requests: Iterable[object] | AsyncIterable[object],
        *,
        defaults: Mapping[str, object] | None = None,
        options: BatchOptions | None = None,
        estimated_tokens: int | None = None,
        total: int | None = None,
        on_result: OnResult | None = None,
        on_progress: Callable[[BatchStats], None] | None = None,
        progress: Any = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        wire: WireFormat | None = None,
    ) -> None:
        opts = self.options = options or BatchOptions()
        self._sender = sender
        self._estimated = estimated_tokens
        self._on_result, self._on_progress, self._progress = on_result, on_progress, progress
        budget: ClientBudget | None = getattr(sender, "budget", None)
        self._hold = None if budget is None else budget.hold(opts.max_cost_usd, opts.prices)  # the client's cap
        cap, prices = (opts.max_cost_usd, opts.prices) if self._hold is None else (self._hold.usd, self._hold.prices)
        self._stats = BatchStats(total=total, concurrency_max=opts.concurrency, max_cost_usd=cap)
        pricer = Pricer(prices) if prices is not None or cap is not None else None
        self.spend = SpendCap(cap, pricer or Pricer()) if cap is not None else None
        self.cache: ResponseCache | None = None
        self._owns_cache = False
        if opts.cache is not None:
            from holysheep.cache import ResponseCache, open_cache

            self.cache = open_cache(opts.cache)
            self._owns_cache = not isinstance(opts.cache, ResponseCache)
        self.queue = WorkQueue(requests, defaults or {}, opts.read_ahead or max(2 * opts.concurrency + 64, 128),
                               wire)
        key = getattr(sender, "limits_key", None)
        scope = None if key is None else limits_scope(key, (defaults or {}).get("model"))  # per base URL, key, model
        self.admission = Admission(opts, clock=clock, sleep=sleep, memory_key=scope)
        self._sink = ResultSink(self._stats, self.queue, self.admission, pricer=pricer)
        self._outage = OutageDetector(no_success_s=opts.outage_after_s, failure_ratio=opts.outage_failure_ratio,
                                      window=opts.outage_window, clock=clock)
        self._runner = AttemptRunner(sender, opts, queue=self.queue, admission=self.admission, sink=self._sink,
                                     outage=self._outage, spend=self.spend, cache=self.cache)
        hooks = active_hooks(getattr(sender, "hooks", None))
        self._hooks: BatchContext | None = None
        if hooks is not None:
            model = (defaults or {}).get("model")
            self._hooks = self._runner.planner.batch_ctx = self._sink.batch_ctx = BatchContext(
                hooks, total=total, concurrency=opts.concurrency, model=model if isinstance(model, str) else None,
                clock=clock)
            self._hooks.stats = self._stats
        self._tasks: set[asyncio.Task[None]] = set()
        self._gc = GCScope(opts.gc_threshold)
        self._started = False
        self._workers = 0
        self._quota_check: asyncio.Task[None] | None = None
        self._quota_deferred = False
        self._ticker: asyncio.Task[None] | None = None  # progress lines also while no result arrives
        self._closed = False

    @property
    def stats(self) -> BatchStats:
        """The batch's figures so far (the load-control figures and the cost are brought up to date on read)."""
        self._sink.sync_stats()
        spend = self.spend
        if spend is not None:
            self._stats.spent_usd = spend.spent_usd
            self._stats.overbilled, self._stats.overbilled_usd = spend.overbilled, spend.overbilled_usd
        return self._stats

    @property
    def read_count(self) -> int:
        """How many inputs have been read so far."""
        return self.queue.read_count

    # ------------------------------------------------------------------ consumer side
    def __aiter__(self) -> BatchIterator[ReplyT, ToolRunT]:
        return self

    async def __anext__(self) -> BatchResult[ReplyT, ToolRunT]:
        if self._closed:
            raise StopAsyncIteration
        if not self._started:
            await self._start()
        item = self._sink.out.get_nowait()
        if item is EMPTY:
            item = await self._sink.out.get()
        if item is END:
            self._finish()
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            await self.aclose()
            raise item
        self.queue.result_taken()
        if self._on_result is not None:
            self._on_result(item)
        if self._on_progress is not None:
            self._on_progress(self.stats)
        if self._progress is not None:
            self._progress.update(self.stats)
        result: BatchResult[ReplyT, ToolRunT] = item  # the channel's item (typed by the batch's entry point)
        return result

    async def close(self) -> None:
        """The same as ``aclose`` (``async with`` calls it)."""
        await self.aclose()

    async def aclose(self) -> None:
        """Stop dispatching and cancel requests in flight (results already delivered stay valid)."""
        if self._closed:
            return
        self._closed = True
        pending = (self._quota_check, *self._tasks, *self._runner.planner.tool_tasks)
        tasks = [t for t in pending if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        self.queue.cancel_backoffs()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._finish()

    def _finish(self) -> None:
        self._closed = True
        hold = self._hold
        if hold is not None and self.spend is not None:  # what the batch spent counts against the client's cap
            budget: ClientBudget | None = getattr(self._sender, "budget", None)
            if budget is not None:
                budget.end_hold(hold, self.spend.spent_usd)
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._gc.exit()
        if self.cache is not None:
            cache, self.cache = self.cache, None
            if self._owns_cache:
                cache.close()
            else:
                cache.flush()
        self._sink.sync_stats()
        if self.stats.finished_at is None:
            self.stats.finished_at = time.monotonic()
        batch = self._hooks
        if batch is not None and not batch.ended and self._started:
            batch.ended = True
            batch.hooks.emit("on_batch_end", BatchEvent(batch))
        if self._progress is not None:
            progress, self._progress = self._progress, None
            progress.close(self.stats)

    async def _start(self) -> None:
        self.stats.started_at = time.monotonic()
        if self._hooks is not None:
            self._hooks.hooks.emit("on_batch_start", BatchEvent(self._hooks))
        if self._progress is not None:
            self._progress.start(self.stats)
        loop = asyncio.get_running_loop()
        opts = self.options
        if opts.check_quota and self.cache is not None:
            self._quota_deferred = True  # checked before the first request that misses the cache: a batch
            # answered from the cache sends nothing at all
        elif opts.check_quota and not opts.require_quota and self.admission.auto:
            # The quota check only warns here, so it need not come first: it runs alongside the first requests
            # and nobody waits for it (a batch starts at full concurrency; a rejected key stops it at its
            # first 401). It holds one of the concurrency slots while it runs: never more in flight than that.
            self._quota_check = loop.create_task(self._check_quota(hold_slot=True))
        elif opts.check_quota:
            try:
                await self._check_quota()
            except BaseException:
                self._finish()
                raise
        self._started = True
        self._gc.enter()
        self._start_workers(loop)
        if self._progress is not None:
            self._ticker = loop.create_task(self._tick())

    async def _tick(self) -> None:
        """Show progress once a second even while no result arrives (a long pause, slow replies); the
        reporter decides whether to draw (a plain line every 10 s, a bar a few times a second)."""
        while self._progress is not None:
            await asyncio.sleep(1.0)  # real time, not the injected clock: the display is for people
            if self._progress is not None:
                self._progress.update(self.stats)

    async def _deferred_quota_check(self) -> None:
        """With a cache: the quota check, once, before the first request (every worker waits for it)."""
        if self._quota_check is None:
            self._quota_check = asyncio.get_running_loop().create_task(self._check_quota())
        await self._quota_check
        self._quota_deferred = False

    async def _check_quota(self, *, hold_slot: bool = False) -> None:
        held = hold_slot and self.admission.limiter.hold()
        try:
            rejected = await check_quota(self._sender, estimated_tokens=self._estimated,
                                         require=self.options.require_quota)
        finally:
            if held:
                self.admission.limiter.unhold()
        if rejected is not None:
            self._runner.stop(rejected, "authentication failed (HTTP 401)")

    # ------------------------------------------------------------------ workers
    def _start_workers(self, loop: asyncio.AbstractEventLoop) -> None:
        self._workers = self.options.concurrency
        for _ in range(self.options.concurrency):
            task = loop.create_task(self._work())
            self._tasks.add(task)
            task.add_done_callback(self._worker_done)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks:  # nothing more is sent: the collector may run as usual again
            self._gc.exit()

    async def _work(self) -> None:
        """One worker: take items in order (retries first), get each admitted, send it, repeat."""
        queue, admission, runner, sink = self.queue, self.admission, self._runner, self._sink
        try:
            while True:  # the *_now calls take the usual case without an await: no coroutine per step
                item = queue.next_now()
                if item is WAIT:
                    item = await queue.next()
                if item is None:
                    break
                if item.invalid is not None:
                    sink.finalize(item, None, item.invalid)
                    continue
                if runner.cache is not None:  # a hit is answered even after a stop: it costs nothing
                    if runner.answer_from_cache(item):
                        continue
                    if self._quota_deferred:  # the first request that will really go out
                        await self._deferred_quota_check()
                if runner.spend is not None and runner.abort is None and not await runner.reserve(item):
                    continue  # finished unsent: no price, or the cap stopped the batch
                if runner.abort is None:
                    charge = admission.admit_now(item.token_estimate)
                    if charge is None:
                        charge = await admission.admit(item.token_estimate)
                    if charge is not None:  # admitted (None: the batch stopped meanwhile; nothing is held)
                        outage = self._outage.check() or admission.stalled
                        if outage is not None:
                            runner.stop_unfinished(outage, None)
                        if runner.abort is None:
                            await runner.run(item, charge)
                            continue
                        admission.release()
                runner.refund(item)
                sink.finalize(item, None, runner.unfinished_error(None))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the input iterable failed: hand its error to the consumer
            self._workers = -1
            sink.out.put_nowait(exc)
            return
        self._workers -= 1
        if self._workers == 0:  # the last worker out ends the results
            if self._quota_check is not None:  # nothing was sent: the check still finishes first
                await self._quota_check
            sink.out.put_nowait(END)

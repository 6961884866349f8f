"""One attempt of one batch item: send it, then finish it, retry it (backoff or pause) or stop the batch.

``AttemptHandler`` is the part of ``holysheep.batch.BatchIterator`` that runs after the
dispatcher has granted an item its slot; it also turns every finished item into a ``BatchResult``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from .._call import Outcome
from .._call_plan import CallPlan
from .._exceptions import APIError, APIStatusError, AuthenticationError, InvalidRequestError
from .._retry import RetryPolicy, is_quota_exhausted, is_retryable
from .._sender import Sender
from .._structured import plan_parse, wants_parse
from ..types.chat import ChatCompletion
from ._limits import AIMDLimiter, Clock, OutageDetector, PauseGate, RetryPace, Sleep, TokenBucket, TokenEstimator
from ._options import BatchOptions
from ._requests import BatchRequest
from ._results import BatchResult, BatchStats, BatchUnfinishedError
from ._server_limits import read_limits

__all__ = ["LEARNED_BURST_S", "LEARNED_SHARE", "AttemptHandler"]

LEARNED_SHARE = 0.98
"""Share of a server-announced limit the batch paces at (a margin for clock skew between the two)."""
LEARNED_BURST_S = 0.2
"""Burst of a learned bucket, in seconds of its rate: small, because requests sent at once can reach the
server together with later ones (connection set-up), and the server's own bucket does not know that."""

logger = logging.getLogger("holysheep.batch")


class AttemptHandler:
    """Per-attempt sending, retry scheduling and result delivery (state is set by ``BatchIterator``).

    Each item holds the client's ``CallPlan``: the client's ``Call`` writes the attempt headers and
    decides every retry (policy, delay, ``on_retry`` hook, fallbacks). The batch only decides *when*
    a retry goes: a 429 or Retry-After pauses the whole batch, retries beyond the budget's share are
    paced, and an outage stops the batch.
    """

    options: BatchOptions
    stats: BatchStats
    _sender: Sender
    _limiter: AIMDLimiter
    _rpm: TokenBucket | None
    _tpm: TokenBucket | None
    _gate: PauseGate
    _pace: RetryPace
    _outage: OutageDetector
    _estimator: TokenEstimator
    _out: asyncio.Queue[Any]
    _retry_ready: deque[BatchRequest]
    _backoff: dict[int, tuple[BatchRequest, asyncio.TimerHandle]]
    _wake: asyncio.Event | None
    _abort: BaseException | None
    _unfinished: int
    _probe: asyncio.Event | None
    _auto: bool
    _clock: Clock
    _sleep: Sleep

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _plan(self, item: BatchRequest) -> CallPlan | None:
        plan: CallPlan | None = item.plan
        if plan is None:
            try:
                plan = item.plan = self._sender.plan(self._request_of(item), idempotency_key=item.key)
            except InvalidRequestError as exc:
                self._finalize(item, None, exc)
                return None
        return plan

    @staticmethod
    def _request_of(item: BatchRequest) -> Mapping[str, Any]:
        """The create() arguments of the item's next request. An item with `response_format=Model` (or
        `max_repairs`) runs parse()'s re-ask loop: its requests come from that loop."""
        if item.request is not None:
            return item.request
        if item.steps is None and wants_parse(item.params):
            item.steps = plan_parse(item.params).steps()
            item.request = next(item.steps)
            return item.request
        if "max_repairs" in item.params:
            return {k: v for k, v in item.params.items() if k != "max_repairs"}
        return item.params

    def _next_step(self, item: BatchRequest, response: ChatCompletion) -> ChatCompletion | None:
        """Feed a structured item's reply to its re-ask loop: the parsed completion when it is done, None
        when a re-ask was queued (a new request, with its own idempotency key) or the item failed."""
        try:
            item.request = item.steps.send(response)
        except StopIteration as stop:
            parsed: ChatCompletion = stop.value
            return parsed
        except APIError as exc:  # StructuredOutputError, RefusalError, ...: the item's own typed error
            self._finalize(item, None, exc)
            return None
        item.repairs += 1
        base = (item.key or "").split("-repair")[0]
        item.key = f"{base}-repair{item.repairs}" if base else None
        item.plan = None
        self._retry_ready.append(item)
        self._poke()
        return None

    async def _attempt(self, item: BatchRequest, charge: int) -> None:
        limiter = self._limiter
        epoch = limiter.epoch
        plan = self._plan(item)
        if plan is None:  # the item's parameters are invalid: it is finished, nothing was sent
            limiter.release()
            if self._probe is not None:
                self._probe.set()  # the rate-limit probe must not wait on an item that never goes out
            return
        if item.key is None:
            item.key = plan.call.headers.get("idempotency-key")  # kept if the item is ever re-planned
        if item.attempts == 0:
            self._pace.on_first_attempt()
            item.first_sent = time.perf_counter()
        item.attempts += 1
        self.stats.requests += 1
        try:
            if self._gate.resume_at and self._gate.paused:
                await self._gate.wait()
            outcome = await self._sender.attempt(plan.call)
        except asyncio.CancelledError:
            limiter.release()
            raise
        finally:
            if self._probe is not None:
                self._probe.set()
        limiter.release()
        if self._auto:
            self._learn(plan.call.response_headers)
        delay = plan.after(outcome)
        if outcome.error is None:
            self._on_success(item, plan.result(), charge)
            return
        if self._tpm is not None and charge:
            self._tpm.adjust(charge)
        self._on_error(item, outcome, delay, epoch)

    def _learn(self, headers: Mapping[str, str] | None) -> None:
        """rpm/tpm="auto": follow the limits the server announces (a bucket per limit, set to what the
        first reply says remains; a new bucket when the limit changes)."""
        limits = read_limits(headers)
        if limits is None:
            return
        first = self._probe is not None and self.stats.learned_rpm is None and self.stats.learned_tpm is None
        opts, stats = self.options, self.stats
        if opts.rpm == "auto" and limits.limit_requests and limits.limit_requests != stats.learned_rpm:
            self._rpm = self._learned_bucket(limits.limit_requests, limits.remaining_requests, first)
            stats.learned_rpm = limits.limit_requests
        if opts.tpm == "auto" and limits.limit_tokens and limits.limit_tokens != stats.learned_tpm:
            self._tpm = self._learned_bucket(limits.limit_tokens, limits.remaining_tokens, first)
            stats.learned_tpm = limits.limit_tokens

    def _learned_bucket(self, limit: float, remaining: float | None, first: bool) -> TokenBucket:
        bucket = TokenBucket.per_minute(limit * LEARNED_SHARE, LEARNED_BURST_S, clock=self._clock, sleep=self._sleep)
        if first and remaining is not None:
            bucket.level = min(bucket.level, remaining)
        return bucket

    def _on_success(self, item: BatchRequest, response: ChatCompletion, charge: int) -> None:
        self._outage.record(True)
        self._limiter.on_success()
        stats = self.stats
        usage = response.usage
        actual = 0
        if usage is not None:
            stats.prompt_tokens += usage.prompt_tokens
            stats.completion_tokens += usage.completion_tokens
            actual = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
            self._estimator.observe(item.est_tokens, actual)
        if self._tpm is not None and charge:
            self._tpm.adjust(charge - actual if actual else 0)
        try:
            cost = response.cost
        except Exception:  # the price catalog is optional
            cost = None
        if cost is not None:
            stats.cost_usd += cost
            stats.cost_known = True
        if item.steps is not None:
            parsed = self._next_step(item, response)
            if parsed is None:
                return
            response = parsed
        self._finalize(item, response, None)

    def _on_error(self, item: BatchRequest, outcome: Outcome, delay: float | None, epoch: int) -> None:
        error = outcome.error
        assert error is not None and item.plan is not None
        stats = self.stats
        if isinstance(error, APIStatusError) and error.status_code == 429 and not is_quota_exhausted(error):
            stats.rate_limited += 1
            self._limiter.on_rate_limited(epoch)
        outage = self._outage.record(False) if is_retryable(error) else None
        if outage is not None:
            self._stop_unfinished(outage, error)
        if delay is None:  # the client's decision: this item is finished
            self._on_final_error(item, error, item.plan.call.policy)
        elif self._abort is not None:
            self._finalize(item, None, self._unfinished_error(error))
        elif isinstance(error, APIStatusError) and (error.status_code == 429 or error.retry_after is not None):
            stats.retries += 1
            self._gate.pause_for(delay)  # the server asked for room: the whole batch waits
            self._retry_ready.append(item)
            self._poke()
        else:
            stats.retries += 1
            extra = self._pace.wait_for()
            if extra:
                stats.retries_paced += 1
            handle = asyncio.get_running_loop().call_later(delay + extra, self._requeue, item)
            self._backoff[item.index] = (item, handle)

    def _on_final_error(self, item: BatchRequest, error: APIError, policy: RetryPolicy) -> None:
        if isinstance(error, AuthenticationError):
            self._stop(error, "authentication failed (HTTP 401)")
        elif is_quota_exhausted(error):
            self._stop(error, f"quota exhausted (HTTP {getattr(error, 'status_code', '?')})")
        retry_after = error.retry_after if isinstance(error, APIStatusError) else None
        if self._abort is None and retry_after is not None and retry_after > policy.max_retry_after \
                and is_retryable(error):
            # The server wants a longer pause than one call waits for: pause the whole batch (up to
            # max_pause_s) and send the item again, or stop the batch (resumable) when that is too long.
            if retry_after > self.options.max_pause_s:
                self._stop_unfinished(f"the server asked to wait {retry_after:.0f} s, longer than "
                                      f"max_pause_s={self.options.max_pause_s:g}", error)
            elif item.attempts <= policy.max_retries:
                self.stats.retries += 1
                self._gate.pause_for(retry_after)
                item.plan = None  # a fresh plan (same idempotency key) once the pause is over
                self._retry_ready.append(item)
                self._poke()
                return
        if self._abort is not None and self._abort is not error:
            self._finalize(item, None, self._unfinished_error(error))
        else:
            self._finalize(item, None, error)

    def _requeue(self, item: BatchRequest) -> None:
        self._backoff.pop(item.index, None)
        self._retry_ready.append(item)
        self._poke()

    def _unfinished_error(self, last: BaseException | None) -> BaseException:
        abort = self._abort
        if isinstance(abort, BatchUnfinishedError):
            return BatchUnfinishedError(str(abort), stop_reason=abort.stop_reason, last_error=last)
        assert abort is not None
        return abort

    def _stop_unfinished(self, reason: str, error: BaseException | None) -> None:
        """Stop for a reason that is not the items' fault: unfinished items end with
        ``BatchUnfinishedError`` (resumable)."""
        self._stop(BatchUnfinishedError(f"not finished: the batch stopped ({reason}); run it again later",
                                        stop_reason=reason, last_error=error), reason)

    def _stop(self, error: BaseException, reason: str) -> None:
        """Stop the batch: nothing more is sent; every unfinished item ends with ``error``."""
        if self._abort is not None:
            return
        self._abort = error
        self.stats.stop_reason = reason
        logger.warning("batch stopped: %s: %s", reason, error)
        for item, handle in self._backoff.values():
            handle.cancel()
            self._retry_ready.append(item)
        self._backoff.clear()
        self._gate.resume_at = 0.0
        self._poke()

    def _sync_stats(self) -> None:
        stats, limiter, gate = self.stats, self._limiter, self._gate
        stats.concurrency = limiter.limit
        stats.concurrency_min = limiter.lowest
        stats.concurrency_decreases = limiter.decreases
        stats.peak_in_flight = limiter.peak_in_flight
        stats.pauses = gate.pauses
        stats.paused_s = gate.paused_s
        stats.retries_paced = self._pace.paced

    def _finalize(self, item: BatchRequest, response: ChatCompletion | None, error: BaseException | None) -> None:
        latency = time.perf_counter() - item.first_sent if item.first_sent is not None else 0.0
        result = BatchResult(item.index, item.custom_id, response, error, item.attempts, latency)
        stats = self.stats
        stats.done += 1
        if error is None:
            stats.succeeded += 1
        else:
            stats.failed += 1
            stats.errors[type(error).__name__] += 1
        self._sync_stats()
        self._unfinished -= 1
        self._out.put_nowait(result)
        self._poke()

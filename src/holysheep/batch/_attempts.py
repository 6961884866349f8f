"""One attempt of one batch item: send it, then finish it, retry it (backoff or pause) or stop the batch.

`AttemptHandler` is the part of `BatchIterator` that runs after the
dispatcher has granted an item its slot; it also turns every finished item into a `BatchResult`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from typing import Any

from .._exceptions import APIConnectionError, APIResponseValidationError, APIStatusError, AuthenticationError
from .._retry import RetryPolicy, backoff_delay, status_is_retryable
from ..types.chat import ChatCompletion
from ._budget import RetryBudget
from ._limits import AIMDLimiter, PauseGate, TokenBucket, TokenEstimator
from ._options import BatchOptions, Send, is_quota_exhausted
from ._requests import BatchRequest
from ._results import BatchResult, BatchStats

__all__ = ["AttemptHandler"]

logger = logging.getLogger("holysheep.batch")


def _retryable(error: BaseException) -> bool:
    if isinstance(error, APIStatusError):
        headers = error.response.headers if error.response is not None else {}
        return status_is_retryable(error.status_code, headers)
    return isinstance(error, (APIConnectionError, APIResponseValidationError))


class AttemptHandler:
    """Per-attempt sending, retry scheduling and result delivery (state is set by ``BatchIterator``)."""

    options: BatchOptions
    stats: BatchStats
    _send: Send
    _limiter: AIMDLimiter
    _tpm: TokenBucket | None
    _gate: PauseGate
    _budget: RetryBudget
    _estimator: TokenEstimator
    _policy: RetryPolicy
    _out: asyncio.Queue[Any]
    _retry_ready: deque[BatchRequest]
    _backoff: dict[int, tuple[BatchRequest, asyncio.TimerHandle]]
    _wake: asyncio.Event | None
    _abort: BaseException | None
    _consecutive_429: int
    _unfinished: int

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _attempt(self, item: BatchRequest, charge: int) -> None:
        limiter = self._limiter
        epoch = limiter.epoch
        if item.attempts == 0:
            self._budget.on_first_attempt()
            item.first_sent = time.perf_counter()
        item.attempts += 1
        self.stats.requests += 1
        params = self._request_params(item)
        try:
            if self._gate.resume_at and self._gate.paused:
                await self._gate.wait()
            response = await self._send(params)
        except asyncio.CancelledError:
            limiter.release()
            raise
        except Exception as exc:
            limiter.release()
            if self._tpm is not None and charge:
                self._tpm.adjust(charge)
            self._on_error(item, exc, epoch)
            return
        limiter.release()
        self._on_success(item, response, charge)

    def _request_params(self, item: BatchRequest) -> dict[str, Any]:
        params = item.params
        key = item.key
        if key is None:
            key = item.key = f"hs-{os.urandom(12).hex()}"  # one key across the item's attempts
        headers: dict[str, str | None] = {"idempotency-key": key}
        if item.attempts > 1:
            headers["x-holysheep-retry-count"] = str(item.attempts - 1)
        extra = params.get("extra_headers")
        if extra:
            headers = {**extra, **headers}
        out = {**params, "extra_headers": headers}
        out["max_retries"] = 0
        return out

    def _on_success(self, item: BatchRequest, response: ChatCompletion, charge: int) -> None:
        self._consecutive_429 = 0
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
        self._finalize(item, response, None)

    def _on_error(self, item: BatchRequest, error: BaseException, epoch: int) -> None:
        if isinstance(error, AuthenticationError):
            self._stop(error, "authentication failed (HTTP 401)")
        elif is_quota_exhausted(error):
            self._stop(error, f"quota exhausted (HTTP {getattr(error, 'status_code', '?')})")
        elif self._abort is None and _retryable(error) and self._schedule_retry(item, error, epoch):
            return
        self._finalize(item, None, error)

    def _schedule_retry(self, item: BatchRequest, error: BaseException, epoch: int) -> bool:
        stats = self.stats
        retry_after = error.retry_after if isinstance(error, APIStatusError) else None
        rate_limited = isinstance(error, APIStatusError) and error.status_code == 429
        if rate_limited:
            stats.rate_limited += 1
            self._consecutive_429 += 1
            self._limiter.on_rate_limited(epoch)
        if retry_after is not None and retry_after > self.options.max_retry_after:
            return False  # the server wants a long pause: report it rather than stall the batch
        if item.attempts > self.options.max_retries:
            return False
        if not self._budget.try_take():
            stats.budget_denied += 1
            return False
        stats.retries += 1
        if rate_limited or retry_after is not None:
            delay = retry_after if retry_after is not None else backoff_delay(self._policy, self._consecutive_429 - 1)
            self._gate.pause_for(delay)
            self._retry_ready.append(item)
            self._poke()
        else:
            delay = backoff_delay(self._policy, item.attempts - 1)
            handle = asyncio.get_running_loop().call_later(delay, self._requeue, item)
            self._backoff[item.index] = (item, handle)
        return True

    def _requeue(self, item: BatchRequest) -> None:
        self._backoff.pop(item.index, None)
        self._retry_ready.append(item)
        self._poke()

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

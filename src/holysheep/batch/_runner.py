"""The async batch engine: bounded, rate-limited, order-tagged dispatch with batch-wide retries.

One dispatcher task reads inputs lazily (bounded read-ahead), waits for the pause gate, a concurrency
slot and the RPM/TPM buckets, and starts one task per attempt. Every input ends as exactly one
:class:`BatchResult`, delivered through :class:`BatchIterator` as it completes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import warnings
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .._exceptions import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    AuthenticationError,
    InvalidRequestError,
    QuotaExceededError,
)
from .._retry import RetryPolicy, backoff_delay, status_is_retryable
from ..types.chat import ChatCompletion
from ._budget import RetryBudget
from ._limits import AIMDLimiter, PauseGate, TokenBucket, TokenEstimator
from ._requests import BatchRequest, normalize_item
from ._results import BatchResult, BatchStats

__all__ = ["BatchIterator", "BatchOptions", "QuotaFn", "Send", "is_quota_exhausted"]

logger = logging.getLogger("holysheep.batch")

Send = Callable[[dict[str, Any]], Awaitable[ChatCompletion]]
"""Sends one chat completion with the given create() parameters (no retries of its own)."""
QuotaFn = Callable[[], Awaitable[Any]]
OnResult = Callable[[BatchResult], None]
_END: Any = object()


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs. See :meth:`holysheep.AsyncClient.chat.completions.batch` for the meaning."""

    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    max_retries: int = 5
    retry_budget: float | None = 0.2
    adaptive: bool = True
    max_retry_after: float = 60.0
    initial_retry_delay: float = 0.5
    max_retry_delay: float = 8.0
    read_ahead: int | None = None
    check_quota: bool = True
    require_quota: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise InvalidRequestError(f"concurrency must be an integer >= 1, got {self.concurrency!r}.",
                                      field="concurrency")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise InvalidRequestError(f"{name} must be a number > 0 or None, got {value!r}.", field=name)
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise InvalidRequestError(f"max_retries must be an integer >= 0, got {self.max_retries!r}.",
                                      field="max_retries")
        if self.retry_budget is not None and not self.retry_budget >= 0:
            raise InvalidRequestError(f"retry_budget must be >= 0 or None, got {self.retry_budget!r}.",
                                      field="retry_budget")


def is_quota_exhausted(error: BaseException) -> bool:
    """A 429 or 402 whose type or code is ``insufficient_quota``: retrying cannot help."""
    return (isinstance(error, APIStatusError) and error.status_code in (402, 429)
            and "insufficient_quota" in (error.type, error.code))


def _retryable(error: BaseException) -> bool:
    if isinstance(error, APIStatusError):
        headers = error.response.headers if error.response is not None else {}
        return status_is_retryable(error.status_code, headers)
    return isinstance(error, (APIConnectionError, APIResponseValidationError))


def client_sender(create: Callable[..., Awaitable[ChatCompletion]]) -> Send:
    """A :data:`Send` over an async ``chat.completions.create`` (client retries off: the batch retries)."""

    async def send(params: dict[str, Any]) -> ChatCompletion:
        return await create(**params)

    return send


class BatchIterator(AsyncIterator[BatchResult]):
    """Results of a running batch as they complete (``async for``); each carries its input ``index``.

    Use ``async with`` (or call :meth:`aclose`) when you may stop early: closing cancels what is in
    flight. Reading the input is lazy with bounded read-ahead, so any (async) iterable works.
    """

    def __init__(
        self,
        send: Send,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        defaults: Mapping[str, Any] | None = None,
        options: BatchOptions | None = None,
        quota: QuotaFn | None = None,
        estimated_tokens: int | None = None,
        total: int | None = None,
        on_result: OnResult | None = None,
        on_progress: Callable[[BatchStats], None] | None = None,
        progress: Any = None,
    ) -> None:
        opts = self.options = options or BatchOptions()
        self._send = send
        self._defaults = dict(defaults or {})
        self._defaults.pop("max_retries", None)
        if isinstance(requests, AsyncIterable):
            self._ait: AsyncIterator[Any] | None = aiter(requests)
            self._it: Iterator[Any] | None = None
        else:
            self._ait, self._it = None, iter(requests)
        self._quota, self._estimated = quota, estimated_tokens
        self._on_result, self._on_progress, self._progress = on_result, on_progress, progress
        self.stats = BatchStats(total=total, concurrency_max=opts.concurrency)
        self._limiter = AIMDLimiter(opts.concurrency, adaptive=opts.adaptive)
        self._rpm = TokenBucket.per_minute(opts.rpm) if opts.rpm else None
        self._tpm = TokenBucket.per_minute(opts.tpm) if opts.tpm else None
        self._gate = PauseGate()
        self._budget = RetryBudget(opts.retry_budget)
        self._estimator = TokenEstimator()
        self._policy = RetryPolicy(opts.max_retries, opts.initial_retry_delay, opts.max_retry_delay,
                                   opts.max_retry_after)
        self._read_ahead = opts.read_ahead or max(2 * opts.concurrency + 64, 128)
        self._out: asyncio.Queue[Any] = asyncio.Queue()
        self._retry_ready: deque[BatchRequest] = deque()
        self._backoff: dict[int, tuple[BatchRequest, asyncio.TimerHandle]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake: asyncio.Event | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._abort: BaseException | None = None
        self._consecutive_429 = 0
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
        if item is _END:
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

    async def _start(self) -> None:
        self._wake = asyncio.Event()
        self.stats.started_at = time.monotonic()
        if self._progress is not None:
            self._progress.start(self.stats)
        if self.options.check_quota and self._quota is not None:
            try:
                await self._check_quota(self._quota)
            except BaseException:
                self._finish()
                raise
        self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())

    async def _check_quota(self, quota: QuotaFn) -> None:
        try:
            info = await quota()
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

    # ------------------------------------------------------------------ dispatcher
    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _read(self) -> Any:
        if self._it is not None:
            return next(self._it, _END)
        return _END

    async def _next_item(self) -> BatchRequest | None:
        assert self._wake is not None
        while True:
            if self._retry_ready:
                return self._retry_ready.popleft()
            if not self._exhausted and self._in_memory < self._read_ahead:
                raw = self._read() if self._ait is None else await anext(self._ait, _END)
                if raw is _END:
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
                    if self._abort is None:
                        task = loop.create_task(self._attempt(item, charge))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                        continue
                    self._limiter.release()
                assert self._abort is not None
                self._finalize(item, None, self._abort)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the input iterable failed: hand its error to the consumer
            self._out.put_nowait(exc)
            return
        self._out.put_nowait(_END)

    # ------------------------------------------------------------------ one attempt
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

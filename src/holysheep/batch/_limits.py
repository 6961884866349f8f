"""Load control for a batch: token buckets (RPM/TPM), AIMD concurrency, the batch-wide pause gate, and
the token estimator that learns from actual ``usage``."""

from __future__ import annotations

import asyncio
import time
from collections import deque

__all__ = ["AIMDLimiter", "PauseGate", "TokenBucket", "TokenEstimator"]


class TokenBucket:
    """A continuously refilled bucket: ``rate`` units per second, holding at most ``capacity``.

    It starts full. A take larger than ``capacity`` waits for a full bucket and then goes into debt,
    so no request is too big to ever run. Only the dispatcher takes, so waiters need no queue.
    """

    def __init__(self, rate: float, capacity: float) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self.rate = rate
        self.capacity = max(1.0, capacity)
        self.level = self.capacity
        self._stamp = time.monotonic()

    @classmethod
    def per_minute(cls, limit: float, burst_seconds: float = 1.0) -> TokenBucket:
        """A bucket for a per-minute limit, with a burst of ``burst_seconds`` worth (default one second)."""
        rate = limit / 60.0
        return cls(rate, rate * burst_seconds)

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    def delay_for(self, amount: float) -> float:
        """Seconds until ``amount`` may be taken (0 when it may be taken now)."""
        self._refill()
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    async def take(self, amount: float) -> None:
        """Wait until ``amount`` fits, then take it."""
        while True:
            delay = self.delay_for(amount)
            if delay <= 0:
                self.level -= amount
                return
            await asyncio.sleep(delay)

    def adjust(self, delta: float) -> None:
        """Give back (``delta > 0``) or charge extra (``delta < 0``) after the real cost is known."""
        self._refill()
        self.level = min(self.capacity, self.level + delta)


class AIMDLimiter:
    """Bounded concurrency whose limit halves on a rate limit and grows by about one per round trip on success.

    ``acquire``/``release`` count requests in flight; never more than ``floor(limit)`` (and never more
    than ``maximum``). A rate limit only lowers the limit once per *epoch*: responses to requests sent
    before the last decrease do not decrease it again.
    """

    def __init__(self, maximum: int, *, adaptive: bool = True, minimum: int = 1, decrease: float = 0.5) -> None:
        if maximum < 1:
            raise ValueError(f"concurrency must be >= 1, got {maximum}")
        self.maximum = maximum
        self.minimum = max(1, min(minimum, maximum))
        self.adaptive = adaptive
        self.factor = decrease
        self.limit = float(maximum)
        self.lowest = float(maximum)
        self.decreases = 0
        self.epoch = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._slots = maximum
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        """Wait for a free slot and take it."""
        if self.in_flight >= self._slots or self._waiters:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                if fut.done() and not fut.cancelled():  # woken but cancelled anyway: pass the slot on
                    self.in_flight -= 1
                    self._wake()
                elif fut in self._waiters:
                    self._waiters.remove(fut)
                raise
            return  # _wake counted us in
        self.in_flight += 1
        if self.in_flight > self.peak_in_flight:
            self.peak_in_flight = self.in_flight

    def release(self) -> None:
        """Give a slot back."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self._slots:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                if self.in_flight > self.peak_in_flight:
                    self.peak_in_flight = self.in_flight
                fut.set_result(None)

    def on_success(self) -> None:
        """Additive increase: +1/limit per success, i.e. about +1 per round of ``limit`` requests."""
        if self.adaptive and self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
            self._slots = int(self.limit)
            self._wake()

    def on_rate_limited(self, sent_epoch: int) -> bool:
        """Multiplicative decrease, once per epoch; True when the limit was lowered."""
        if not self.adaptive or sent_epoch != self.epoch:
            return False
        self.epoch += 1
        self.limit = max(float(self.minimum), self.limit * self.factor)
        self.lowest = min(self.lowest, self.limit)
        self._slots = int(self.limit)
        self.decreases += 1
        return True


class PauseGate:
    """A batch-wide pause: after ``pause_for(s)``, ``wait()`` blocks everyone until the time has passed."""

    def __init__(self) -> None:
        self.resume_at = 0.0
        self.pauses = 0
        self.paused_s = 0.0

    def pause_for(self, seconds: float) -> None:
        """Extend the pause to at least ``seconds`` from now (a shorter request never shortens it)."""
        now = time.monotonic()
        end = now + max(0.0, seconds)
        if end > self.resume_at:
            self.paused_s += end - max(self.resume_at, now)
            if self.resume_at <= now:
                self.pauses += 1
            self.resume_at = end

    @property
    def paused(self) -> bool:
        return self.resume_at > time.monotonic()

    async def wait(self) -> None:
        """Return once no pause is in force."""
        while True:
            delay = self.resume_at - time.monotonic()
            if delay <= 0:
                return
            await asyncio.sleep(min(delay, 0.1))  # short naps: a stop lifts the pause at once


class TokenEstimator:
    """Estimates a request's tokens (prompt chars / 4 + max_tokens), corrected by what requests really used.

    The correction is a moving average of ``actual / raw estimate`` over completed requests, clamped
    to ``[0.05, 4]``.
    """

    def __init__(self, alpha: float = 0.1) -> None:
        self.alpha = alpha
        self.factor = 1.0
        self.samples = 0

    def estimate(self, raw: int) -> int:
        """The corrected estimate for a request whose raw estimate is ``raw``."""
        return max(1, int(raw * self.factor + 0.5))

    def observe(self, raw: int, actual: int) -> None:
        """Learn from a completed request."""
        if raw <= 0 or actual <= 0:
            return
        ratio = actual / raw
        self.samples += 1
        alpha = max(self.alpha, 1.0 / self.samples)  # the first samples count fully
        self.factor = min(4.0, max(0.05, self.factor + alpha * (ratio - self.factor)))

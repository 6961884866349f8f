"""Load control for a batch: token buckets (RPM/TPM), AIMD concurrency, the batch-wide pause gate, the
retry pace, the outage detector, and the token estimator that learns from actual ``usage``.

Everything that waits or reads time takes ``clock`` (seconds, monotonic) and ``sleep`` (an async
function) in its constructor, so tests drive exact schedules with a fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable

from holysheep._engine.waiters import wake_first

__all__ = ["AIMDLimiter", "Clock", "OutageDetector", "PauseGate", "RetryPace", "Sleep", "TokenBucket",
           "TokenEstimator"]

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """A continuously refilled bucket: ``rate`` units per second, holding at most ``capacity``.

    It starts full. A take larger than ``capacity`` waits for a full bucket and then goes into debt,
    so no request is too big to ever run. Only the dispatcher takes, so waiters need no queue. ``level``
    may be set above ``capacity`` (a burst the server announced): it is spent, and refills only to ``capacity``.
    """

    def __init__(self, rate: float, capacity: float, *, clock: Clock = time.monotonic,
                 sleep: Sleep = asyncio.sleep) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self.rate = rate
        self.capacity = max(1.0, capacity)
        self.level = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._stamp = clock()

    @classmethod
    def per_minute(cls, limit: float, burst_seconds: float = 1.0, *, clock: Clock = time.monotonic,
                   sleep: Sleep = asyncio.sleep) -> TokenBucket:
        """A bucket for a per-minute limit, with a burst of ``burst_seconds`` worth (default one second)."""
        rate = limit / 60.0
        return cls(rate, rate * burst_seconds, clock=clock, sleep=sleep)

    def _refill(self) -> None:
        now = self._clock()
        if self.level < self.capacity:  # a level above it is a burst the server announced: spent, not refilled
            self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    def delay_for(self, amount: float) -> float:
        """Seconds until ``amount`` may be taken (0 when it may be taken now)."""
        self._refill()
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need - 1e-9 else (need - self.level) / self.rate  # 1e-9: float noise

    def take_now(self, amount: float) -> bool:
        """Take ``amount`` if it fits now (True); False, taking nothing, when it would have to wait."""
        if self.delay_for(amount) > 0:
            return False
        self.level -= amount
        return True

    async def take(self, amount: float) -> None:
        """Wait until ``amount`` fits, then take it."""
        while True:
            delay = self.delay_for(amount)
            if delay <= 0:
                self.level -= amount
                return
            await self._sleep(delay)

    def retune(self, rate: float, capacity: float) -> None:
        """Change the rate and capacity in place: the level is kept (at most the new capacity), so a limit
        announced as 600 then 601 does not refill the bucket."""
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self._refill()
        self.rate = rate
        self.capacity = max(1.0, capacity)
        self.level = min(self.level, self.capacity)

    def adjust(self, delta: float) -> None:
        """Give back (``delta > 0``) or charge extra (``delta < 0``) after the real cost is known."""
        self._refill()
        self.level = min(max(self.capacity, self.level), self.level + delta)


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
        self.held = 0
        """Slots taken by `hold` (in ``in_flight``, not in ``peak_in_flight``)."""
        self._slots = maximum
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_acquire(self) -> bool:
        """Take a free slot now if there is one and nobody waits for it (True), else False."""
        if self.in_flight >= self._slots or self._waiters:
            return False
        self.in_flight += 1
        if self.in_flight - self.held > self.peak_in_flight:
            self.peak_in_flight = self.in_flight - self.held
        return True

    def hold(self) -> bool:
        """Take a free slot for something that is not a batch request (the quota check), if one is free now;
        not counted in ``peak_in_flight``. Given back with ``release``."""
        if self.in_flight >= self._slots or self._waiters:
            return False
        self.in_flight += 1
        self.held += 1
        return True

    def unhold(self) -> None:
        """Give back a slot `hold` took."""
        self.held -= 1
        self.release()

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
        if self.in_flight - self.held > self.peak_in_flight:
            self.peak_in_flight = self.in_flight - self.held

    def release(self) -> None:
        """Give a slot back."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self.in_flight < self._slots and wake_first(self._waiters):
            self.in_flight += 1
            if self.in_flight - self.held > self.peak_in_flight:
                self.peak_in_flight = self.in_flight - self.held

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

    def __init__(self, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self.resume_at = 0.0
        self.pauses = 0
        self.paused_s = 0.0

    def pause_for(self, seconds: float) -> None:
        """Extend the pause to at least ``seconds`` from now (a shorter request never shortens it)."""
        now = self._clock()
        end = now + max(0.0, seconds)
        if end > self.resume_at:
            self.paused_s += end - max(self.resume_at, now)
            if self.resume_at <= now:
                self.pauses += 1
            self.resume_at = end

    @property
    def paused(self) -> bool:
        return self.resume_at > self._clock()

    async def wait(self) -> None:
        """Return once no pause is in force."""
        while True:
            delay = self.resume_at - self._clock()
            if delay <= 0:
                return
            await self._sleep(min(delay, 0.1))  # short naps: a stop lifts the pause at once


class RetryPace:
    """The retry budget as a pace: retries never get refused, but those beyond their share wait.

    The share is ``ratio * max(first_attempts, min_requests)`` retries. A retry within it goes at once
    (after its own backoff); one beyond it is given the next free slot of a schedule that sends
    ``max(floor_per_s, ratio * first_attempts / elapsed)`` retries per second (the budget's rate, with
    a floor as in Finagle's RetryBudget). ``ratio=None`` turns pacing off.
    """

    def __init__(self, ratio: float | None = 0.2, *, min_requests: int = 50, floor_per_s: float = 10.0,
                 clock: Clock = time.monotonic) -> None:
        self.ratio = ratio
        self.min_requests = min_requests
        self.floor_per_s = floor_per_s
        self._clock = clock
        self._started = clock()
        self._next_slot = 0.0
        self.first_attempts = 0
        self.retries = 0
        self.paced = 0

    def on_first_attempt(self) -> None:
        """Count a request sent for the first time."""
        self.first_attempts += 1

    def rate(self) -> float:
        """Retries per second allowed beyond the share."""
        assert self.ratio is not None
        elapsed = max(self._clock() - self._started, 1e-9)
        return max(self.floor_per_s, self.ratio * self.first_attempts / elapsed)

    def wait_for(self) -> float:
        """Take a retry; the extra seconds it must wait beyond its backoff (0 within the share)."""
        self.retries += 1
        if self.ratio is None or self.retries <= self.ratio * max(self.first_attempts, self.min_requests):
            return 0.0
        now = self._clock()
        slot = max(now, self._next_slot)
        self._next_slot = slot + 1.0 / self.rate()
        self.paced += 1
        return slot - now


class OutageDetector:
    """Tells a real outage from transient faults: no success for ``no_success_s`` seconds, or at least
    ``failure_ratio`` of the last ``window`` attempts failed (once ``window`` attempts were seen).

    A rate-limit reply (429) is no failure here: a server that answers "slow down" is up. It counts as a
    sign of life (``rate_limited``): only time spent on other failures counts towards ``no_success_s``."""

    def __init__(self, *, no_success_s: float = 60.0, failure_ratio: float = 0.9, window: int = 100,
                 clock: Clock = time.monotonic) -> None:
        self.no_success_s = no_success_s
        self.failure_ratio = failure_ratio
        self._clock = clock
        self._recent: deque[bool] = deque(maxlen=window)
        self._failures = 0
        self._last_success = clock()

    def record(self, ok: bool) -> str | None:
        """Record an attempt's outcome; a stop reason when it shows an outage, else None."""
        recent = self._recent
        if len(recent) == recent.maxlen and not recent[0]:
            self._failures -= 1
        recent.append(ok)
        if ok:
            self._last_success = self._clock()
            return None
        self._failures += 1
        if len(recent) == recent.maxlen and self._failures >= self.failure_ratio * len(recent):
            return (f"outage: {self._failures} of the last {len(recent)} attempts failed "
                    f"(outage_failure_ratio={self.failure_ratio})")
        return self.check()

    def rate_limited(self, wait_s: float = 0.0) -> None:
        """A 429 after which the batch waits ``wait_s``: the server is up and asks for a slower pace; the
        no-success clock starts again when that wait ends."""
        self._last_success = max(self._last_success, self._clock() + max(0.0, wait_s))

    def check(self) -> str | None:
        """A stop reason when nothing has succeeded for ``no_success_s`` seconds."""
        quiet = self._clock() - self._last_success
        if quiet >= self.no_success_s:
            return f"outage: no success for {quiet:.0f} s (outage_after_s={self.no_success_s:g})"
        return None


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

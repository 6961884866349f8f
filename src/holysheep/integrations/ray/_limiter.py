"""The cluster-wide rate limit: RPM/TPM token buckets that replicas lease permits from in chunks.

Pure Python (no Ray import) with an injected clock, so its schedule is tested exactly; the named Ray actor
in `_actors` wraps one instance. A lease answer is a `Lease`; times in answers are *relative* seconds, so
replicas on other machines never compare clocks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ClusterRateLimiter", "Lease"]

_CANARY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Lease:
    """The answer to `ClusterRateLimiter.lease`.

    `requests`/`tokens` are granted permits (0 when nothing was granted); `wait_s` is how long to wait
    before asking again; `stopped` is the message of a cluster-wide stop (a rejected key), else None.
    """

    requests: int = 0
    tokens: int = 0
    wait_s: float = 0.0
    stopped: str | None = None


class _Bucket:
    """A token bucket: `rate` per second, at most `capacity`; may go into debt for one oversized take."""

    def __init__(self, per_minute: float, burst_s: float, now: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        need = min(amount, self.capacity) - self.level
        return max(0.0, need / self.rate)

    def set_rate(self, per_minute: float, burst_s: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = min(self.level, self.capacity)


class ClusterRateLimiter:
    """One RPM/TPM limit shared by every replica of a job.

    - `lease(requests, tokens)` grants up to `requests` request permits (at least one, or none) and the
      tokens asked for, or says how long to wait. Leasing in chunks keeps the limiter off the per-request path.
    - `pause(seconds)`: a 429 anywhere pauses every replica for its Retry-After.
    - `learn(...)`: limits the server announces (`x-ratelimit-limit-requests` / `-tokens`) lower the
      configured ones (never raise them).
    - Until one request has been answered (`confirm()`), only one request is let out cluster-wide (the
      canary), so a rejected key costs one request, not one per replica; `stop(message)` then refuses every
      later lease.

    `burst_s` is the bucket size in seconds of rate: small, so the server never sees a burst above its limit.
    """

    def __init__(self, rpm: float | None = None, tpm: float | None = None, *, burst_s: float = 0.5,
                 canary: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 or None, got {value!r}")
        if not burst_s > 0:
            raise ValueError(f"burst_s must be > 0, got {burst_s!r}")
        self._clock = clock
        now = clock()
        self._burst_s = burst_s
        self._configured = (rpm, tpm)
        self._rpm = _Bucket(rpm, burst_s, now) if rpm else None
        self._tpm = _Bucket(tpm, burst_s, now) if tpm else None
        self._paused_until = 0.0
        self._stopped: str | None = None
        self._confirmed = not canary
        self._canary_at: float | None = None
        self.granted_requests = 0
        self.granted_tokens = 0
        self.pauses = 0

    # ------------------------------------------------------------------ replicas' calls
    def lease(self, requests: int = 1, tokens: int = 0) -> Lease:
        """Grant up to `requests` request permits and exactly `tokens` tokens, or say how long to wait."""
        if requests < 0 or tokens < 0 or requests + tokens == 0:
            raise ValueError(f"lease needs requests >= 0, tokens >= 0, one of them > 0; got {requests}, {tokens}")
        if self._stopped is not None:
            return Lease(stopped=self._stopped)
        now = self._clock()
        if now < self._paused_until:
            return Lease(wait_s=self._paused_until - now)
        if not self._confirmed and requests:
            if self._canary_at is not None and now - self._canary_at < _CANARY_TIMEOUT_S:
                return Lease(wait_s=0.02)
            self._canary_at, requests = now, 1
        waits = []
        grant = requests
        if self._rpm is not None and requests:
            self._rpm.refill(now)
            grant = min(requests, math.floor(self._rpm.level + 1e-9))
            if grant < 1:
                waits.append(self._rpm.wait_for(1))
        if self._tpm is not None and tokens:
            self._tpm.refill(now)
            if self._tpm.level < min(tokens, self._tpm.capacity):
                waits.append(self._tpm.wait_for(tokens))
        if waits:
            if self._canary_at == now:
                self._canary_at = None
            return Lease(wait_s=max(max(waits), 1e-3))
        if self._rpm is not None and requests:
            self._rpm.level -= grant
        if self._tpm is not None and tokens:
            self._tpm.level -= tokens
        self.granted_requests += grant
        self.granted_tokens += tokens
        return Lease(requests=grant, tokens=tokens)

    def release_canary(self) -> None:
        """The canary got no answer (connection error): let the next lease send another one."""
        self._canary_at = None

    def confirm(self) -> None:
        """The server answered a request with something other than a rejected key: let everyone send."""
        self._confirmed = True

    def stop(self, message: str) -> None:
        """Refuse every later lease with `message` (a rejected key ends the whole job)."""
        if self._stopped is None:
            self._stopped = message

    def pause(self, seconds: float) -> None:
        """Pause every replica for `seconds` from now (a 429's Retry-After); the longest pause wins."""
        if seconds > 0:
            self.pauses += 1
            self._paused_until = max(self._paused_until, self._clock() + seconds)

    def learn(self, limit_requests: float | None = None, limit_tokens: float | None = None) -> None:
        """Per-minute limits the server announced; they lower the configured ones, never raise them."""
        for value, index in ((limit_requests, 0), (limit_tokens, 1)):
            if value is None or not value > 0:
                continue
            configured = self._configured[index]
            rate = value if configured is None else min(configured, value)
            bucket = self._rpm if index == 0 else self._tpm
            if bucket is None:
                bucket = _Bucket(rate, self._burst_s, self._clock())
                if index == 0:
                    self._rpm = bucket
                else:
                    self._tpm = bucket
            else:
                bucket.refill(self._clock())
                bucket.set_rate(rate, self._burst_s)

    # ------------------------------------------------------------------ inspection
    def limits(self) -> tuple[float | None, float | None]:
        """The per-minute request and token limits in force."""
        return (None if self._rpm is None else self._rpm.per_minute,
                None if self._tpm is None else self._tpm.per_minute)

    def __repr__(self) -> str:
        rpm, tpm = self.limits()
        return f"<ClusterRateLimiter rpm={rpm} tpm={tpm} granted={self.granted_requests}>"

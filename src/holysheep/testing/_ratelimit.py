"""A request-rate limit that FakeServer can enforce, as real servers do: a token bucket per server."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["RequestRateLimit"]


class RequestRateLimit:
    """`rpm` requests per minute, refilled continuously, with room for a burst of `burst` requests.

    `take()` returns None when the request may go on, else the seconds until one more request is allowed
    (the Retry-After of the 429). `burst` defaults to one second's worth (at least 1).
    """

    def __init__(self, rpm: float, burst: float | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not rpm > 0:
            raise ValueError(f"rpm must be > 0, got {rpm!r}")
        self.rpm = rpm
        self.rate = rpm / 60.0
        self.capacity = max(1.0, burst if burst is not None else self.rate)
        self._clock = clock
        self._level = self.capacity
        self._stamp = clock()
        self.allowed = 0
        self.rejected = 0

    def take(self) -> float | None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._level >= 1.0:
            self._level -= 1.0
            self.allowed += 1
            return None
        self.rejected += 1
        return (1.0 - self._level) / self.rate

    def headers(self, wait_s: float) -> dict[str, str]:
        """The headers of a 429 from this limit (OpenAI style)."""
        ms = max(1, math.ceil(wait_s * 1000))
        return {"retry-after-ms": str(ms), "retry-after": format(ms / 1000, "g"),
                "x-ratelimit-limit-requests": format(self.rpm, "g"), "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": f"{ms}ms"}

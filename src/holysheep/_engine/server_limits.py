"""Rate limits the server announces: ``x-ratelimit-*`` headers parsed into numbers (pure code).

``x-ratelimit-limit-requests`` / ``-tokens`` (per minute), ``x-ratelimit-remaining-*`` and
``x-ratelimit-reset-*`` (durations such as ``1s``, ``6m0s``, ``20ms``, ``1m30.5s``, or plain seconds).
``retry-after-ms`` / ``retry-after`` are read by the client's retry code (``_retry.parse_retry_after``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["LEARNED_BURST_S", "LEARNED_SHARE", "LIMITS_MEMORY", "LimitsMemory", "ServerLimits", "parse_duration",
           "read_limits"]

LEARNED_SHARE = 0.98
"""Share of a server-announced limit a batch paces at (a margin for clock skew between the two)."""
LEARNED_BURST_S = 0.2
"""Burst of a learned bucket, in seconds of its rate: small, because requests sent at once can reach the
server together with later ones (connection set-up), and the server's own bucket does not know that."""

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str | None) -> float | None:
    """Seconds in ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1m30.5s"``, ``"1h2m"`` or ``"2.5"``; None if unusable."""
    if text is None:
        return None
    text = text.strip().lower()
    try:
        value = float(text)
    except ValueError:
        pos, total = 0, 0.0
        for match in _PART.finditer(text):
            if match.start() != pos:
                return None
            total += float(match.group(1)) * _UNIT[match.group(2)]
            pos = match.end()
        return total if pos == len(text) and pos > 0 else None
    return value if math.isfinite(value) and value >= 0 else None


def _number(headers: Mapping[str, str], name: str) -> float | None:
    raw = headers.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True)
class ServerLimits:
    """One response's view of the limits (None where the header is absent or unusable)."""

    limit_requests: float | None = None
    remaining_requests: float | None = None
    reset_requests_s: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None
    reset_tokens_s: float | None = None


def read_limits(headers: Mapping[str, str] | None) -> ServerLimits | None:
    """The ``x-ratelimit-*`` headers of a response, or None when it sends none."""
    if headers is None or (headers.get("x-ratelimit-limit-requests") is None and \
            headers.get("x-ratelimit-limit-tokens") is None):
        return None
    return ServerLimits(
        _number(headers, "x-ratelimit-limit-requests"), _number(headers, "x-ratelimit-remaining-requests"),
        parse_duration(headers.get("x-ratelimit-reset-requests")),
        _number(headers, "x-ratelimit-limit-tokens"), _number(headers, "x-ratelimit-remaining-tokens"),
        parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )


class LimitsMemory:
    """What each server (base URL and key) last announced, so a later batch in the same process need not
    send its first request alone to learn it again. An entry is the limits, or None when the server
    announced none; it is trusted for ``ttl_s`` seconds. Replies keep correcting it as they come."""

    def __init__(self, ttl_s: float = 600.0, size: int = 64, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._size = size
        self._entries: dict[str, tuple[float, ServerLimits | None]] = {}

    def remember(self, key: str, limits: ServerLimits | None) -> None:
        """Record what ``key``'s server announced just now."""
        now = self._clock()
        if key not in self._entries and len(self._entries) >= self._size:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (now, limits)

    def recall(self, key: str) -> tuple[bool, ServerLimits | None]:
        """(known, limits): whether a fresh entry exists for ``key``, and what it holds."""
        entry = self._entries.get(key)
        if entry is None or self._clock() - entry[0] > self.ttl_s:
            return False, None
        return True, entry[1]

    def forget(self) -> None:
        """Drop every entry."""
        self._entries.clear()


LIMITS_MEMORY = LimitsMemory()
"""The process-wide memory the batch engine uses (``LIMITS_MEMORY.forget()`` starts afresh)."""

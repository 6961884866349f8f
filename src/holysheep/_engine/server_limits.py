"""Rate limits the server announces: ``x-ratelimit-*`` and ``anthropic-ratelimit-*`` headers parsed into
numbers (pure code), with implausible values dropped.

``x-ratelimit-limit-requests`` / ``-tokens`` (per minute unless limit, remaining and reset show a
window of an hour or a day: see `limit_window`), ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*``
(durations such as ``1s``, ``6m0s``, ``20ms``, ``1m30.5s``, or plain seconds); Anthropic's
``anthropic-ratelimit-*`` with RFC 3339 resets.
``retry-after-ms`` / ``retry-after`` are read by the client's retry code (``_retry.parse_retry_after``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

__all__ = ["LEARNED_BURST_S", "LEARNED_SHARE", "LIMITS_MEMORY", "MAX_LIMIT", "MIN_LIMIT_REQUESTS", "MIN_LIMIT_TOKENS",
           "LimitsMemory", "ServerLimits", "limit_window", "limits_scope", "parse_duration", "read_limits"]

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


MIN_LIMIT_REQUESTS = 1.0
"""The smallest request limit taken at face value: below one request a window, the number is noise."""
MIN_LIMIT_TOKENS = 100.0
"""The smallest token limit taken at face value: no chat request fits in fewer tokens."""
MAX_LIMIT = 1e12
"""The largest limit taken at face value."""
WINDOWS_S = (3600.0, 86400.0)
"""Windows longer than a minute a limit may be over (an hour, a day: Groq's requests per day)."""
WINDOW_TOLERANCE = 0.25
"""How far a window derived from limit, remaining and reset may be from one of `WINDOWS_S` to count."""


def _number(headers: Mapping[str, str], name: str) -> float | None:
    raw = headers.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _rfc3339_seconds(raw: str | None, now: float) -> float | None:
    """Seconds from ``now`` to an RFC 3339 time (Anthropic's resets); None if unusable; 0 if past."""
    if not raw:
        return None
    try:
        when = datetime.fromisoformat(raw.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return parse_duration(raw)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now)


def _server_now(headers: Mapping[str, str], clock: Callable[[], float]) -> float:
    """The reply's own ``Date`` (so a reset is read on the server's clock), else the local clock."""
    raw = headers.get("date")
    if raw:
        try:
            return parsedate_to_datetime(raw).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    return clock()


@dataclass(frozen=True)
class ServerLimits:
    """One response's view of the limits (None where the header is absent, unusable or implausible).

    ``ignored`` names the headers whose values were implausible (a limit below `MIN_LIMIT_REQUESTS` or
    `MIN_LIMIT_TOKENS`, or above `MAX_LIMIT`): they are dropped, never paced at.
    """

    limit_requests: float | None = None
    remaining_requests: float | None = None
    reset_requests_s: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None
    reset_tokens_s: float | None = None
    ignored: tuple[str, ...] = ()

    def requests_window_s(self) -> float | None:
        """The window of the request limit when the headers show one longer than a minute (see
        `limit_window`); None when they show none."""
        return limit_window(self.limit_requests, self.remaining_requests, self.reset_requests_s)

    def tokens_window_s(self) -> float | None:
        """The window of the token limit, as `requests_window_s`."""
        return limit_window(self.limit_tokens, self.remaining_tokens, self.reset_tokens_s)


def limit_window(limit: float | None, remaining: float | None, reset_s: float | None) -> float | None:
    """The window a limit is over, when limit, remaining and reset show one longer than a minute.

    A limit is per minute unless said otherwise. The reset is the time until the bucket is full again;
    at a steady refill the whole window is ``reset * limit / (limit - remaining)``. When that lands
    within 25% of an hour or a day (Groq announces requests per day with a reset such as ``2m59.56s``
    for 30 used of 14,400), the limit is over that window; anything else (a server whose resets follow
    another rule) keeps the per-minute reading, so a misread reset can only fall back to what was
    read before.

    A reset more than a minute away is never a per-minute limit's, whatever the numbers (the issue's server
    announced 14,400 with 14,000 remaining and a reset of ``2m59.56s``): the limit is then over the first of
    `WINDOWS_S` that is at least the derived window (or the reset), and it paces nothing per minute (the pace is
    learned from 429s)."""
    if not limit or reset_s is None or reset_s <= 0:
        return None
    window = reset_s * limit / (limit - remaining) if remaining is not None and remaining < limit else reset_s
    if remaining is not None and remaining < limit:
        for candidate in WINDOWS_S:
            if abs(window - candidate) <= WINDOW_TOLERANCE * candidate:
                return candidate
    if reset_s <= 60.0:
        return None
    return next((candidate for candidate in WINDOWS_S if candidate >= window), WINDOWS_S[-1])


def _plausible(value: float | None, low: float, name: str, ignored: list[str]) -> float | None:
    if value is not None and not low <= value <= MAX_LIMIT:
        ignored.append(f"{name}: {value:g}")
        return None
    return value


_ANTHROPIC = "anthropic-ratelimit-"
_ANTHROPIC_NAMES = ("requests-limit", "requests-remaining", "tokens-limit", "tokens-remaining",
                    "input-tokens-limit", "input-tokens-remaining")


def read_limits(headers: Mapping[str, str] | None, *, clock: Callable[[], float] = time.time) -> ServerLimits | None:
    """The rate-limit headers of a response, or None when it sends none.

    Reads OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (resets as durations) and
    Anthropic's ``anthropic-ratelimit-{requests,tokens,input-tokens}-{limit,remaining,reset}`` (resets as
    RFC 3339 times, read against the reply's ``Date``). A reply with only ``remaining`` and ``reset``
    headers counts too. Implausible limits are dropped and named in ``ignored``.
    """
    if headers is None:
        return None
    if headers.get("x-ratelimit-limit-requests") is not None or headers.get("x-ratelimit-limit-tokens") is not None \
            or headers.get("x-ratelimit-remaining-requests") is not None \
            or headers.get("x-ratelimit-remaining-tokens") is not None:
        values = [_number(headers, "x-ratelimit-limit-requests"), _number(headers, "x-ratelimit-remaining-requests"),
                  parse_duration(headers.get("x-ratelimit-reset-requests")),
                  _number(headers, "x-ratelimit-limit-tokens"), _number(headers, "x-ratelimit-remaining-tokens"),
                  parse_duration(headers.get("x-ratelimit-reset-tokens"))]
        names = ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens")
    elif any(headers.get(f"{_ANTHROPIC}{name}") is not None for name in _ANTHROPIC_NAMES):
        now = _server_now(headers, clock)
        tokens = "tokens" if headers.get(f"{_ANTHROPIC}tokens-limit") is not None \
            or headers.get(f"{_ANTHROPIC}tokens-remaining") is not None else "input-tokens"
        values = [_number(headers, f"{_ANTHROPIC}requests-limit"), _number(headers, f"{_ANTHROPIC}requests-remaining"),
                  _rfc3339_seconds(headers.get(f"{_ANTHROPIC}requests-reset"), now),
                  _number(headers, f"{_ANTHROPIC}{tokens}-limit"), _number(headers, f"{_ANTHROPIC}{tokens}-remaining"),
                  _rfc3339_seconds(headers.get(f"{_ANTHROPIC}{tokens}-reset"), now)]
        names = (f"{_ANTHROPIC}requests-limit", f"{_ANTHROPIC}{tokens}-limit")
    else:
        return None
    ignored: list[str] = []
    values[0] = _plausible(values[0], MIN_LIMIT_REQUESTS, names[0], ignored)
    values[3] = _plausible(values[3], MIN_LIMIT_TOKENS, names[1], ignored)
    if not any(v is not None for v in values):
        return None if not ignored else ServerLimits(ignored=tuple(ignored))
    return ServerLimits(values[0], values[1], values[2], values[3], values[4], values[5], tuple(ignored))


def limits_scope(key: str, model: object) -> str:
    """Whose limits: ``key`` (base URL and a digest of the API key) and the batch's ``model``. Servers keep rate
    limits per model (OpenAI, LiteLLM's deployments), so learned and announced limits are kept per (base URL,
    key, model): a batch on one model never inherits another model's pace. A limit the server shares across the
    key's models is still kept: every reply's ``remaining`` caps each model's bucket. A batch without a
    ``model=`` (each request names its own) keeps the key's limits across its models."""
    return f"{key}|model={model}" if isinstance(model, str) and model else key


class LimitsMemory:
    """What each server (base URL and key) last announced, so a later batch in the same process need not
    send its first request alone to learn it again. An entry is the limits, or None when the server
    announced none; it is trusted for ``ttl_s`` seconds. Replies keep correcting it as they come."""

    def __init__(self, ttl_s: float = 600.0, size: int = 64, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._size = size
        self._entries: dict[str, tuple[float, ServerLimits | None]] = {}
        self._warned: set[tuple[str | None, str]] = set()

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

    def first_warning(self, key: str | None, what: str) -> bool:
        """True the first time ``what`` is warned about for ``key`` (so an implausible header is logged once,
        not once per reply or per batch)."""
        if (key, what) in self._warned:
            return False
        if len(self._warned) >= 1024:
            self._warned.clear()
        self._warned.add((key, what))
        return True

    def forget(self) -> None:
        """Drop every entry (and which warnings were given)."""
        self._entries.clear()
        self._warned.clear()


LIMITS_MEMORY = LimitsMemory()
"""The process-wide memory the batch engine uses (``LIMITS_MEMORY.forget()`` starts afresh)."""

"""Retry decisions as pure functions: which outcomes retry, and how long to wait.

Retried: HTTP 408, 409, 429, every status >= 500, connection errors and timeouts.
Never retried: 400, 401, 403, 404, 422 (and any other 4xx), and a 402/429 whose type or code is
``insufficient_quota`` (exhausted quota: waiting cannot help). An ``x-should-retry: true|false``
response header overrides the status rule, except for a 401: a rejected key is never sent again,
whatever the server says. A 2xx whose body is not the expected JSON, or that carries no answer
(``{}``, ``{"error": ...}``, no choices), is retried.

``is_retryable(error)`` is the one classification of an error the client, the batch and the fallback
router all use.

Delay: a server-directed ``retry-after-ms`` or ``Retry-After`` (seconds, integer or float, or an
HTTP date, read against the reply's own ``Date`` header so a server whose clock is off is still
understood, and capped at one day) is honoured when it is finite and between 0 and ``max_retry_after``
(default 60 s).
A larger value means the server wants a long pause: the call is not retried and the error
carries ``retry_after`` so the caller can decide. Garbage, negative, infinite or NaN values fall
back to backoff: ``min(initial * 2**retries, max_delay) * (1 - 0.25 * random())``.
A value of 0 (``Retry-After: 0``, ``0.0``, a date in the past) asks for nothing: ``Call.decide``
waits the backoff's step instead (never less than its first step, growing with each retry), so a server that
answers every request with ``429`` and ``Retry-After: 0`` gets what the backoff allows, not a request per round
trip.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from holysheep._exceptions import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITLSError,
    ResponseTooLargeError,
)

__all__ = [
    "MAX_RETRY_AFTER_DATE_S",
    "NEVER_RETRY_STATUSES",
    "RetryPolicy",
    "backoff_delay",
    "http_date",
    "is_quota_exhausted",
    "is_retryable",
    "parse_retry_after",
    "server_delay",
    "status_is_retryable",
]

NEVER_RETRY_STATUSES = frozenset({400, 401, 403, 404, 422})
MAX_RETRY_AFTER_DATE_S = 86400.0
"""The most a ``Retry-After`` HTTP date is read as (one day): a date decades ahead is not a real request."""
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait; configurable per client and per call."""

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0


def parse_retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asks us to wait, or None when absent or unusable.

    ``retry-after-ms`` wins over ``retry-after``. Negative, infinite, NaN and unparsable values
    give None. An HTTP date is measured from the reply's ``Date`` header when it has a usable one
    (a server whose clock runs 10 minutes fast asking for 2 s means 2 s), else from ``now()``; a date
    in the past gives 0, and a date more than `MAX_RETRY_AFTER_DATE_S` ahead gives that cap.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = math.nan
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        when = http_date(raw)
        if when is None:
            return None
        sent = http_date(headers.get("date"))
        return min(MAX_RETRY_AFTER_DATE_S, max(0.0, when - (sent if sent is not None else now())))
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


def http_date(raw: str | None) -> float | None:
    """An HTTP date (``Wed, 21 Oct 2015 07:28:00 GMT``) as a Unix timestamp; None when absent or unusable."""
    if not raw:
        return None
    try:
        when = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:  # pragma: no cover - older Pythons returned None
        return None
    try:
        stamp = when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None
    return stamp if math.isfinite(stamp) else None


def status_is_retryable(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a response with this status (and headers) may be retried (a 401 never is)."""
    if status == 401:
        return False
    override = headers.get("x-should-retry")
    if override is not None:
        value = override.strip().lower()
        if value == "true":
            return True
        if value == "false":
            return False
    return _retried_status(status)


def _retried_status(status: int) -> bool:
    """The status table: 408, 409, 429 and every status >= 500 (before ``x-should-retry``)."""
    return status in _RETRY_STATUSES or status >= 500


def server_delay(status: int, headers: Mapping[str, str]) -> float | None:
    """The ``retry-after-ms`` / ``Retry-After`` a reply of this status carries, for every status the retry table
    retries (one table: a status added to it honours its ``Retry-After`` too); None for the others."""
    return parse_retry_after(headers) if _retried_status(status) else None


def backoff_delay(policy: RetryPolicy, retries_taken: int, rand: Callable[[], float] = random.random) -> float:
    """Exponential backoff with jitter (75–100% of the nominal delay), capped at ``max_delay``."""
    nominal = min(policy.initial_delay * (2.0 ** min(retries_taken, 60)), policy.max_delay)
    return nominal * (1.0 - 0.25 * rand())


def is_quota_exhausted(error: BaseException) -> bool:
    """A 402 or 429 whose type or code is ``insufficient_quota``: retrying cannot help."""
    return (isinstance(error, APIStatusError) and error.status_code in (402, 429)
            and "insufficient_quota" in (getattr(error, "type", None), getattr(error, "code", None)))


def is_retryable(error: BaseException) -> bool:
    """The retry classification shared by ``Call``, the batch and the fallback router.

    Transport errors (connect, timeout, reset) and invalid 2xx bodies: yes. HTTP errors: by
    ``status_is_retryable`` (status and ``x-should-retry``), except exhausted quota. Anything else: no.
    """
    if isinstance(error, APIStatusError):
        if is_quota_exhausted(error):
            return False
        headers = error.response.headers if error.response is not None else {}
        return status_is_retryable(error.status_code, headers)
    if isinstance(error, (APITLSError, ResponseTooLargeError)):  # the same certificate, or body, comes again
        return False
    return isinstance(error, (APIConnectionError, APIResponseValidationError))

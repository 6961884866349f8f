"""Response limits as settings (pure): the default byte caps, the stream idle default, their check, and an
attempt's whole deadline.

The transports enforce them (``holysheep._transports.body`` and ``.deadlines``); the core only decides.
"""

from __future__ import annotations

import httpx

from holysheep._exceptions import InvalidRequestError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_STREAM_TEXT_BYTES",
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "attempt_seconds",
    "check_limit",
]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a non-stream body, after decompression (64 MiB)
DEFAULT_MAX_STREAM_TEXT_BYTES = 64 * 1024 * 1024  # what one stream keeps: its text, UTF-8 (64 MiB)
DEFAULT_STREAM_IDLE_TIMEOUT = 300.0  # seconds a stream may go without an event (5 minutes)


def check_limit(name: str, value: object) -> int:
    """Validate a byte limit (an integer >= 1) and return it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequestError(f"{name} must be an integer number of bytes >= 1, got {value!r}.", field=name)
    return value


def attempt_seconds(timeout: httpx.Timeout) -> float | None:
    """The deadline of one whole attempt for a ``timeout`` setting.

    ``Client(timeout=3)`` gives every attempt 3 s in all (connect, send, headers and body together),
    on top of the per-phase limits. With an ``httpx.Timeout`` the deadline is its largest phase limit;
    ``read=None`` means no deadline.
    """
    if timeout.read is None:
        return None
    parts = [v for v in (timeout.connect, timeout.read, timeout.write, timeout.pool) if v is not None]
    return max(parts)

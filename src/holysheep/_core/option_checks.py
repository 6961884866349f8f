"""Checks for client, call and batch options: the one place each option's rule and message live.

Every failure raises ``InvalidRequestError`` naming the option, what was wrong and what to pass.
"""

from __future__ import annotations

import math

from holysheep._exceptions import InvalidRequestError

__all__ = [
    "check_choice",
    "check_idle_timeout",
    "check_int",
    "check_max_retries",
    "check_non_negative",
    "check_positive_or_none",
    "http2_backend",
]


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isnan(value)


def check_max_retries(value: object, name: str = "max_retries") -> None:
    """``max_retries`` is an integer >= 0 (0 turns retries off)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequestError(
            f"{name} must be an integer >= 0, got {value!r}. Use 0 to disable retries.", field=name)


def check_int(value: object, name: str, minimum: int) -> None:
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidRequestError(f"{name} must be an integer >= {minimum}, got {value!r}.", field=name)


def check_non_negative(value: object, name: str) -> None:
    """A finite-or-infinite number >= 0 (seconds, ratios)."""
    if not _is_number(value) or value < 0:  # type: ignore[operator]
        raise InvalidRequestError(f"{name} must be a number >= 0, got {value!r}.", field=name)


def check_positive_or_none(value: object, name: str, *, allow: tuple[str, ...] = ()) -> None:
    """A number > 0, None, or one of the strings in ``allow`` (such as ``"auto"``)."""
    if value is None or (isinstance(value, str) and value in allow):
        return
    if not _is_number(value) or value <= 0:  # type: ignore[operator]
        extra = "".join(f", {a!r}" for a in allow)
        raise InvalidRequestError(f"{name} must be a number > 0{extra} or None, got {value!r}.", field=name)


def check_idle_timeout(value: object, name: str = "stream_idle_timeout") -> None:
    """Seconds > 0, or None for no idle limit."""
    if value is not None and (not _is_number(value) or value <= 0):  # type: ignore[operator]
        raise InvalidRequestError(f"{name} must be seconds > 0 or None, got {value!r}.", field=name)


def check_choice(value: object, name: str, choices: tuple[object, ...]) -> None:
    """One of ``choices``."""
    if value not in choices:
        names = ", ".join(repr(c) for c in choices)
        raise InvalidRequestError(f"{name} must be one of {names}, got {value!r}.", field=name)


def http2_backend(http_backend: str, backend_given: bool, has_http_client: bool) -> str:
    """The backend an ``http2=True`` client sends with: httpx (aiohttp speaks HTTP/1.1 only). Left out,
    ``http_backend`` becomes ``"httpx"``; ``http_backend="aiohttp"``, an ``http_client`` or a missing ``h2``
    package is an `InvalidRequestError` (before any request)."""
    if has_http_client:
        raise InvalidRequestError(
            "http2=True does not apply to an http_client you pass (it is used as it is). Build that client with "
            "httpx's own http2=True, or leave http_client out.", field="http2")
    if backend_given and http_backend != "httpx":
        raise InvalidRequestError(
            f"http2=True needs http_backend=\"httpx\": http_backend={http_backend!r} speaks HTTP/1.1 only. Pass "
            "http_backend=\"httpx\" (or leave http_backend out: http2=True then selects httpx).", field="http2")
    import importlib.util

    if importlib.util.find_spec("h2") is None:
        raise InvalidRequestError("http2=True needs the h2 package: pip install \"holysheep[http2]\" (or "
                                  "pip install \"h2>=4\").", field="http2")
    return "httpx"

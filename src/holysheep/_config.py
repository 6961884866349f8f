"""Client configuration: resolved once from arguments and environment, validated before any I/O."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union
from urllib.parse import urlsplit

import httpx

from ._exceptions import InsecureTransportError, InvalidAPIKeyError, InvalidRequestError
from ._keys import ENV_API_KEY, SecretKey, mask_key, validate_holysheep_key
from ._version import __version__

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "ClientConfig",
    "TimeoutTypes",
    "is_holysheep_host",
    "is_loopback_host",
    "make_config",
    "normalize_timeout",
]

DEFAULT_BASE_URL = "https://api.holysheep.ai/v1"
ENV_BASE_URL = "HOLYSHEEP_BASE_URL"
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
DEFAULT_MAX_RETRIES = 2
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
USER_AGENT = f"holysheep-python/{__version__}"

TimeoutTypes = Union[float, int, httpx.Timeout, None]
OnRetry = Callable[[int, Any, float], None]


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` and loopback IPs (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_holysheep_host(host: str) -> bool:
    """True when ``host`` is the HolySheep API (where ``hs_`` keys are required)."""
    host = host.lower()
    return host == "holysheep.ai" or host.endswith(".holysheep.ai")


def normalize_timeout(timeout: TimeoutTypes, *, field_name: str = "timeout") -> httpx.Timeout:
    """Turn seconds (or an ``httpx.Timeout``, or None for no limit) into a validated ``httpx.Timeout``."""
    if isinstance(timeout, httpx.Timeout):
        for part in ("connect", "read", "write", "pool"):
            value = getattr(timeout, part)
            if value is not None and (value <= 0 or math.isnan(value)):
                raise InvalidRequestError(
                    f"{field_name}.{part} must be > 0 seconds, got {value}: a request could never finish in "
                    "it. Use None for no limit.",
                    field=field_name,
                )
        return timeout
    if timeout is None:
        return httpx.Timeout(None)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidRequestError(
            f"{field_name} must be seconds (a number), an httpx.Timeout or None, got {type(timeout).__name__}.",
            field=field_name,
        )
    if timeout <= 0 or math.isnan(timeout):
        raise InvalidRequestError(
            f"{field_name} must be > 0 seconds, got {timeout}: no request can finish in that time. "
            "Pass a positive number of seconds, or None to wait without limit.",
            field=field_name,
        )
    return httpx.Timeout(float(timeout), connect=min(float(timeout), 5.0))


def _check_non_negative(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or math.isnan(value):
        raise InvalidRequestError(f"{name} must be a number >= 0, got {value!r}.", field=name)


def _normalize_base_url(base_url: str) -> httpx.URL:
    if not isinstance(base_url, str) or not base_url.strip():
        raise InvalidRequestError(
            f"base_url must be a non-empty URL such as {DEFAULT_BASE_URL!r}, got {base_url!r}.",
            field="base_url",
        )
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidRequestError(
            f"base_url {base_url!r} needs an http:// or https:// scheme and a host, "
            f"for example {DEFAULT_BASE_URL!r} or 'http://127.0.0.1:8000/v1'.",
            field="base_url",
        )
    try:
        url = httpx.URL(base_url.strip())
    except Exception as exc:  # httpx.InvalidURL and friends
        raise InvalidRequestError(f"base_url {base_url!r} is not a valid URL: {exc}", field="base_url") from None
    if not url.raw_path.endswith(b"/"):
        url = url.copy_with(raw_path=url.raw_path + b"/")
    return url


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs to build requests; immutable, shared by sync and async shells."""

    api_key: SecretKey
    base_url: httpx.URL
    timeout: httpx.Timeout
    max_retries: int
    initial_retry_delay: float
    max_retry_delay: float
    max_retry_after: float
    stream_idle_timeout: float | None
    default_headers: Mapping[str, str | None]
    allow_insecure_http: bool
    on_retry: OnRetry | None
    base_headers: dict[str, str] = field(repr=False, compare=False)
    urls: dict[str, tuple[httpx.URL, str]] = field(default_factory=dict, repr=False, compare=False)

    def replace(self, **changes: Any) -> ClientConfig:
        """A copy with some fields changed (validated like the constructor's)."""
        if "timeout" in changes:
            changes["timeout"] = normalize_timeout(changes["timeout"])
        for name in ("initial_retry_delay", "max_retry_delay", "max_retry_after"):
            if name in changes:
                _check_non_negative(name, changes[name])
        if "max_retries" in changes:
            _check_max_retries(changes["max_retries"])
        new = dataclasses.replace(self, **changes)
        object.__setattr__(new, "base_headers", _base_headers(new.api_key, new.default_headers))
        object.__setattr__(new, "urls", {})
        return new

    def __repr__(self) -> str:
        return (
            f"ClientConfig(base_url={str(self.base_url)!r}, api_key={mask_key(self.api_key.reveal())!r}, "
            f"max_retries={self.max_retries})"
        )


def _check_max_retries(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequestError(
            f"max_retries must be an integer >= 0, got {value!r}. Use 0 to disable retries.",
            field="max_retries",
        )


def _base_headers(api_key: SecretKey, default_headers: Mapping[str, str | None]) -> dict[str, str]:
    headers = {
        "accept": "application/json",
        "accept-encoding": "gzip, deflate",
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    key = api_key.reveal()
    if key:
        headers["authorization"] = f"Bearer {key}"
    for name, value in default_headers.items():
        if value is None:
            headers.pop(name.lower(), None)
        else:
            headers[name.lower()] = value
    return headers


def make_config(
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: TimeoutTypes | httpx.Timeout,
    max_retries: int,
    initial_retry_delay: float,
    max_retry_delay: float,
    max_retry_after: float,
    stream_idle_timeout: float | None,
    default_headers: Mapping[str, str | None] | None,
    allow_insecure_http: bool,
    on_retry: OnRetry | None,
) -> ClientConfig:
    """Resolve arguments and environment variables into a validated `ClientConfig`."""
    url = _normalize_base_url(base_url if base_url is not None else os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL)
    key = api_key if api_key is not None else os.environ.get(ENV_API_KEY) or None
    host = url.host
    if is_holysheep_host(host):
        if not key:
            raise InvalidAPIKeyError(
                f"No API key: pass api_key='hs_...' to the client or set the {ENV_API_KEY} environment "
                "variable. Keys start with 'hs_' and are created in the HolySheep dashboard."
            )
        validate_holysheep_key(key)
    elif key is not None and not isinstance(key, str):
        raise InvalidAPIKeyError(f"api_key must be a string or None, got {type(key).__name__}.")
    if url.scheme == "http" and key and not is_loopback_host(host) and not allow_insecure_http:
        raise InsecureTransportError(
            f"Refusing to send the API key over plain http:// to {host!r}, where anyone on the path can read "
            "it. Use https://, or pass allow_insecure_http=True if this network is trusted."
        )
    _check_max_retries(max_retries)
    for name, value in (
        ("initial_retry_delay", initial_retry_delay),
        ("max_retry_delay", max_retry_delay),
        ("max_retry_after", max_retry_after),
    ):
        _check_non_negative(name, value)
    if stream_idle_timeout is not None:
        _check_non_negative("stream_idle_timeout", stream_idle_timeout)
    secret = SecretKey(key)
    headers = dict(default_headers or {})
    return ClientConfig(
        api_key=secret,
        base_url=url,
        timeout=normalize_timeout(timeout),
        max_retries=max_retries,
        initial_retry_delay=float(initial_retry_delay),
        max_retry_delay=float(max_retry_delay),
        max_retry_after=float(max_retry_after),
        stream_idle_timeout=stream_idle_timeout,
        default_headers=headers,
        allow_insecure_http=allow_insecure_http,
        on_retry=on_retry,
        base_headers=_base_headers(secret, headers),
    )

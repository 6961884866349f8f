"""Client configuration: resolved once from arguments and environment, validated before any I/O."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union
from urllib.parse import urlsplit

import httpx

from holysheep._core.hooks import HookSet, check_hooks
from holysheep._core.httpx2_types import is_httpx2
from holysheep._core.keys import ENV_API_KEY, SecretKey, check_key_characters, mask_key, validate_holysheep_key
from holysheep._core.network import DEFAULT_NETWORK, NetworkSettings, make_network
from holysheep._core.option_checks import check_max_retries
from holysheep._core.response_limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STREAM_TEXT_BYTES,
    DEFAULT_STREAM_IDLE_TIMEOUT,
    check_limit,
)
from holysheep._core.sse import DEFAULT_MAX_SSE_BYTES
from holysheep._core.tool_limits import DEFAULT_TOOL_THREADS, check_tool_threads
from holysheep._egress import KEY_HEADERS, header_secret, remember_headers
from holysheep._exceptions import InsecureTransportError, InvalidAPIKeyError, InvalidRequestError
from holysheep._version import __version__

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "ClientConfig",
    "TimeoutTypes",
    "check_key_transport",
    "is_holysheep_host",
    "is_loopback_host",
    "make_config",
    "normalize_timeout",
]

DEFAULT_BASE_URL = "https://api.holysheep.ai/v1"
ENV_BASE_URL = "HOLYSHEEP_BASE_URL"
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
DEFAULT_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
USER_AGENT = f"holysheep-python/{__version__}"

class TimeoutLike(Protocol):
    """A timeout object with httpx's four parts: an ``httpx.Timeout`` or an ``httpx2.Timeout``."""

    def as_dict(self) -> dict[str, float | None]: ...


TimeoutTypes = Union[float, int, httpx.Timeout, TimeoutLike, None]
OnRetry = Callable[[int, Any, float], None]


def is_loopback_host(host: str) -> bool:
    """True only for ``localhost``, 127.0.0.0/8 and ``::1``.

    Names under ``.localhost`` do not count: the system resolver may send them to DNS.
    """
    host = host.strip("[]").lower()
    if host == "localhost":
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
    """Turn seconds (or an ``httpx.Timeout`` or ``httpx2.Timeout``, or None for no limit) into a validated
    ``httpx.Timeout``."""
    if is_httpx2(timeout, "Timeout"):
        timeout = httpx.Timeout(**timeout.as_dict())  # type: ignore[union-attr]  # httpx2: same parts
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
            f"{field_name} must be seconds (a number), an httpx.Timeout (or httpx2.Timeout) or None, got "
            f"{type(timeout).__name__}.",
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
            f"base_url must be a non-empty URL such as {DEFAULT_BASE_URL!r}, got "
            f"{base_url if not isinstance(base_url, str) else 'an empty string'!r}.",
            field="base_url",
        )
    check_no_userinfo(base_url, "base_url")
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise InvalidRequestError(f"base_url {base_url!r} is not a valid URL: {exc}. Use a URL such as "
                                  f"{DEFAULT_BASE_URL!r} or 'http://127.0.0.1:8000/v1'.", field="base_url") from None
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
    path, sep, query = url.raw_path.partition(b"?")  # a query (Azure's ?api-version=) stays after the path
    if not path.endswith(b"/"):
        url = url.copy_with(raw_path=path + b"/" + sep + query)
    return url


def check_no_userinfo(url: str, field_name: str) -> None:
    """Refuse ``user:password@`` in a URL, without ever printing it (it is often a key)."""
    rest = url.strip().partition("://")[2] if "://" in url else url.strip()
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in netloc:
        raise InvalidRequestError(
            f"{field_name} contains user information ('user:password@host'), which is not sent as the API key and "
            "would be printed wherever the URL is shown. Remove it from the URL (not shown here) and pass the key "
            "as api_key=... instead.", field=field_name, reason="credentials in the URL")


_KEY_HEADERS = KEY_HEADERS


def check_headers(field_name: str, headers: object) -> dict[str, str | None]:
    """Validate a header mapping (str names and values, ASCII, no CR/LF/NUL) and return it as a dict.

    A value of None removes a default header. Raises `InvalidRequestError` naming the header.
    """
    if not isinstance(headers, Mapping):
        raise InvalidRequestError(
            f"{field_name} must be a dict of header names to strings, got {type(headers).__name__}. "
            f"For example {field_name}={{'x-trace-id': 'abc'}}.", field=field_name)
    out: dict[str, str | None] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not name or not name.isascii() or any(c in name for c in " :\r\n\0\t"):
            raise InvalidRequestError(
                f"{field_name} has an invalid header name {name!r}: use a non-empty ASCII token such as "
                "'x-trace-id'.", field=field_name)
        where = f"{field_name}[{name!r}]"
        if value is not None:
            if not isinstance(value, str):
                raise InvalidRequestError(
                    f"{where} must be a string (or None to remove the header), got {type(value).__name__}. "
                    "Convert it first, e.g. str(value).", field=where)
            secret = header_secret(name, value)
            if secret is not None:  # a credential: say what is wrong without quoting it (its owner remembers it)
                check_key_characters(secret, where)
            if any(c in value for c in "\r\n\0"):
                raise InvalidRequestError(
                    f"{where} contains a line break or NUL, which would split the HTTP header. Remove it.",
                    field=where)
            if not value.isascii():
                raise InvalidRequestError(
                    f"{where} contains non-ASCII characters, which HTTP headers cannot carry. Percent-encode or "
                    "remove them.", field=where)
        out[name] = value
    return out


def check_key_transport(url: httpx.URL, allow_insecure_http: bool, key: str | None,
                        headers: Mapping[str, str | None] | None = None, *, field: str = "base_url") -> None:
    """The one check before a key leaves: the client's ``api_key``, or a header that carries one
    (``Authorization``, ``api-key``, ``x-api-key``, ``Proxy-Authorization``) in ``default_headers`` or a
    call's ``extra_headers``, never goes over plain ``http://`` to a host that is not loopback unless
    ``allow_insecure_http=True``. Raises `InsecureTransportError` before any request."""
    if url.scheme != "http" or allow_insecure_http or is_loopback_host(url.host):
        return
    sends_key = bool(key) or any(v and k.lower() in _KEY_HEADERS for k, v in (headers or {}).items())
    if sends_key:
        raise InsecureTransportError(
            f"Refusing to send the API key over plain http:// to {url.host!r}, where anyone on the path can read "
            "it. Use https://, or pass allow_insecure_http=True if this network is trusted.", field=field)


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
    call_settings: dict[bool, Any] = field(default_factory=dict, repr=False, compare=False)
    """The retry policy and timeouts of a call that overrides nothing, by ``stream`` (filled by ``Call``)."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_sse_event_bytes: int = DEFAULT_MAX_SSE_BYTES
    max_stream_text_bytes: int = DEFAULT_MAX_STREAM_TEXT_BYTES
    """The most text one stream keeps (content, reasoning, refusals, tool calls; UTF-8 bytes)."""
    tool_threads: int = DEFAULT_TOOL_THREADS
    """Tool calls (``run_tools``, batch agents) running at once in the SDK's own threads."""
    hooks: HookSet | None = field(default=None, compare=False)
    """The client's hooks (``Client(hooks=[...])``), or None."""
    network: NetworkSettings = DEFAULT_NETWORK
    """Proxy and TLS settings (``proxy=``, ``trust_env=``, ``verify=``, ``cert=`` and the environment)."""
    default_query: Mapping[str, Any] = field(default_factory=dict)
    """Query parameters added to every request's URL (openai's ``default_query``; a call's ``extra_query`` wins)."""
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False, compare=False)
    """Monotonic seconds for everything a call measures: attempt start, ``elapsed_s``, stream metrics and hook
    events. Not a client argument: tests set it through ``BaseClient._use_clock`` to assert exact times."""

    def __post_init__(self) -> None:
        remember_headers(self.default_headers, self)  # masked in every output while this config lives (_egress)

    def replace(self, **changes: Any) -> ClientConfig:
        """A copy with some fields changed (validated like the constructor's)."""
        changes = _checked(changes)
        if "default_headers" in changes:
            check_key_transport(self.base_url, self.allow_insecure_http, self.api_key.reveal(),
                                changes["default_headers"], field="default_headers")
        new = dataclasses.replace(self, **changes)
        object.__setattr__(new, "base_headers", _base_headers(new.api_key, new.default_headers))
        object.__setattr__(new, "urls", {})
        object.__setattr__(new, "call_settings", {})
        return new

    def __repr__(self) -> str:
        return (
            f"ClientConfig(base_url={str(self.base_url)!r}, api_key={mask_key(self.api_key.reveal())!r}, "
            f"max_retries={self.max_retries})"
        )


def _checked(options: Mapping[str, Any]) -> dict[str, Any]:
    """Check (and normalize) each option present in ``options``: the one validation of ``make_config`` and
    ``ClientConfig.replace`` (``with_options``), so both refuse a bad value with the same error."""
    out = dict(options)
    if "default_headers" in out:
        out["default_headers"] = check_headers("default_headers", out["default_headers"])
    for name in ("max_response_bytes", "max_sse_event_bytes", "max_stream_text_bytes"):
        if name in out:
            check_limit(name, out[name])
    if "tool_threads" in out:
        check_tool_threads(out["tool_threads"])
    if out.get("default_query") is not None and not isinstance(out["default_query"], Mapping):
        raise InvalidRequestError(f"default_query must be a dict of query parameters, got "
                                  f"{type(out['default_query']).__name__}.", field="default_query")
    if out.get("stream_idle_timeout") is not None:
        _check_non_negative("stream_idle_timeout", out["stream_idle_timeout"])
    if out.get("on_retry") is not None and not callable(out["on_retry"]):
        raise InvalidRequestError(f"on_retry must be a callable (attempt, error, delay), got "
                                  f"{type(out['on_retry']).__name__}.", field="on_retry")
    if "timeout" in out:
        out["timeout"] = normalize_timeout(out["timeout"])
    if "hooks" in out:
        out["hooks"] = check_hooks(out["hooks"])
    if "clock" in out and not callable(out["clock"]):
        raise InvalidRequestError(f"clock must be a callable returning seconds, got "
                                  f"{type(out['clock']).__name__}.", field="clock")
    for name in ("initial_retry_delay", "max_retry_delay", "max_retry_after"):
        if name in out:
            _check_non_negative(name, out[name])
            out[name] = float(out[name])
    if "max_retries" in out:
        check_max_retries(out["max_retries"])
    return out


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
    initial_retry_delay: float = 0.5,
    max_retry_delay: float = 8.0,
    max_retry_after: float = 60.0,
    stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
    default_headers: Mapping[str, str | None] | None = None,
    allow_insecure_http: bool = False,
    on_retry: OnRetry | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    max_sse_event_bytes: int = DEFAULT_MAX_SSE_BYTES,
    max_stream_text_bytes: int = DEFAULT_MAX_STREAM_TEXT_BYTES,
    tool_threads: int = DEFAULT_TOOL_THREADS,
    hooks: object = None,
    proxy: str | None = None,
    trust_env: bool = True,
    verify: object = True,
    cert: object = None,
    http2: bool = False,
    default_query: Mapping[str, object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ClientConfig:
    """Resolve arguments and environment variables into a validated `ClientConfig` (the defaults here are
    the clients' defaults)."""
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
    elif key:
        check_key_characters(key, "api_key" if api_key is not None else ENV_API_KEY)
    checked = _checked({
        "default_headers": default_headers if default_headers is not None else {}, "on_retry": on_retry,
        "max_response_bytes": max_response_bytes, "max_sse_event_bytes": max_sse_event_bytes,
        "max_retries": max_retries, "initial_retry_delay": initial_retry_delay, "max_retry_delay": max_retry_delay,
        "max_retry_after": max_retry_after, "stream_idle_timeout": stream_idle_timeout, "timeout": timeout,
        "hooks": hooks, "clock": clock, "max_stream_text_bytes": max_stream_text_bytes, "tool_threads": tool_threads,
        "default_query": default_query})
    headers = checked["default_headers"]
    if not isinstance(allow_insecure_http, bool):
        raise InvalidRequestError(f"allow_insecure_http must be True or False, got {allow_insecure_http!r}.",
                                  field="allow_insecure_http")
    check_key_transport(url, allow_insecure_http, key, headers)
    network = make_network(proxy=proxy, trust_env=trust_env, verify=verify, cert=cert, http2=http2)
    secret = SecretKey(key)
    return ClientConfig(
        api_key=secret,
        base_url=url,
        timeout=checked["timeout"],
        max_retries=max_retries,
        initial_retry_delay=checked["initial_retry_delay"],
        max_retry_delay=checked["max_retry_delay"],
        max_retry_after=checked["max_retry_after"],
        stream_idle_timeout=stream_idle_timeout,
        default_headers=headers,
        allow_insecure_http=allow_insecure_http,
        on_retry=on_retry,
        base_headers=_base_headers(secret, headers),
        max_response_bytes=max_response_bytes,
        max_sse_event_bytes=max_sse_event_bytes,
        max_stream_text_bytes=max_stream_text_bytes,
        tool_threads=tool_threads,
        hooks=checked["hooks"],
        network=network,
        default_query=dict(default_query or {}),
        clock=clock,
    )

"""What the sync and async clients share: configuration, repr, ``with_options``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import httpx

from ._config import ClientConfig, OnRetry, TimeoutTypes, make_config
from ._fallback import CircuitBreaker, Fallback, Router
from ._keys import mask_key
from ._logging import setup_logging

__all__ = ["BaseClient", "LazyPool"]

_P = TypeVar("_P")


class LazyPool(Generic[_P]):
    """The HTTP client, created on first use (building one loads TLS certificates: tens of ms) and shared
    by every ``with_options`` copy."""

    __slots__ = ("_factory", "_value")

    def __init__(self, value: _P | None, factory: Callable[[], _P]) -> None:
        self._value = value
        self._factory = factory

    @property
    def created(self) -> bool:
        return self._value is not None

    def get(self) -> _P:
        value = self._value
        if value is None:
            value = self._value = self._factory()
        return value

_Self = TypeVar("_Self", bound="BaseClient")


def _warn_if_tls_unverified(http_client: object) -> None:
    """TLS verification is on by default; a custom http_client that turns it off is never silent."""
    import ssl

    pool = getattr(getattr(http_client, "_transport", None), "_pool", None)
    ctx = getattr(pool, "_ssl_context", None)
    if isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_NONE:
        import warnings

        from ._logging import logger

        message = ("The http_client passed to holysheep does not verify TLS certificates (verify=False): anyone on "
                   "the network path can read your API key. Remove verify=False unless this is a test.")
        logger.warning(message)
        warnings.warn(message, stacklevel=4)


class BaseClient:
    """Configuration holder behind `Client` and `AsyncClient`."""

    _config: ClientConfig
    _owns_http: bool

    def _init_config(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        timeout: TimeoutTypes,
        max_retries: int,
        default_headers: Mapping[str, str | None] | None,
        initial_retry_delay: float,
        max_retry_delay: float,
        max_retry_after: float,
        stream_idle_timeout: float | None,
        allow_insecure_http: bool,
        on_retry: OnRetry | None,
        http_client: object,
        http_client_type: type,
        fallbacks: Sequence[Fallback] | None = None,
        circuit_breaker: CircuitBreaker | None = None,
    ) -> None:
        """Validate and store the configuration, the pool ownership flags and the fallback router."""
        setup_logging()
        self._config = make_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            initial_retry_delay=initial_retry_delay, max_retry_delay=max_retry_delay,
            max_retry_after=max_retry_after, stream_idle_timeout=stream_idle_timeout,
            default_headers=default_headers, allow_insecure_http=allow_insecure_http, on_retry=on_retry,
        )
        if http_client is not None and isinstance(http_client, http_client_type):
            _warn_if_tls_unverified(http_client)
        if http_client is not None and not isinstance(http_client, http_client_type):
            from ._exceptions import InvalidRequestError

            raise InvalidRequestError(
                f"http_client must be an {http_client_type.__module__}.{http_client_type.__qualname__}, "
                f"got {type(http_client).__name__}.",
                field="http_client",
            )
        self._owns_http = http_client is None
        self._custom_http = http_client is not None  # then its build_request applies its defaults
        self._router = Router(self._config, list(fallbacks), circuit_breaker) if fallbacks else None

    @property
    def base_url(self) -> httpx.URL:
        """The API base URL (always ends with ``/``)."""
        return self._config.base_url

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt for retryable failures."""
        return self._config.max_retries

    @property
    def timeout(self) -> httpx.Timeout:
        """Per-attempt timeout."""
        return self._config.timeout

    def with_options(
        self: _Self,
        *,
        timeout: TimeoutTypes | object = ...,
        max_retries: int | None = None,
        initial_retry_delay: float | None = None,
        max_retry_delay: float | None = None,
        stream_idle_timeout: float | object | None = ...,
        default_headers: Mapping[str, str | None] | None = None,
        on_retry: OnRetry | None = None,
    ) -> _Self:
        """A copy with some options changed. It shares this client's connection pool (closing the
        copy does not close the pool)."""
        changes: dict[str, Any] = {}
        if timeout is not ...:
            changes["timeout"] = timeout
        if stream_idle_timeout is not ...:
            changes["stream_idle_timeout"] = stream_idle_timeout
        for name, value in (("max_retries", max_retries), ("initial_retry_delay", initial_retry_delay),
                            ("max_retry_delay", max_retry_delay), ("on_retry", on_retry)):
            if value is not None:
                changes[name] = value
        if default_headers is not None:
            changes["default_headers"] = {**self._config.default_headers, **default_headers}
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._config = self._config.replace(**changes)
        new._owns_http = False
        new._bind_resources()
        return new

    copy = with_options

    def _bind_resources(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        """Fallback use and the primary's circuit state (empty counters when no fallbacks are set)."""
        router = getattr(self, "_router", None)
        if router is None:
            return {"circuit": None, "circuit_opened": 0, "endpoints": {}, "fallback_served": 0}
        stats: dict[str, Any] = router.stats()
        return stats

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(base_url={str(self._config.base_url)!r}, "
                f"api_key={mask_key(self._config.api_key.reveal())!r}, max_retries={self._config.max_retries})")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError(f"{type(self).__name__} cannot be pickled (it holds a key and a connection pool); "
                        "create a new client in the other process")


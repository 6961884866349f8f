"""What the sync and async clients share: configuration, repr, ``with_options``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import httpx

from holysheep._clients.client_warnings import warn_if_tls_unverified, warn_plain_http2, warn_unverified
from holysheep._clients.http_clients import DefaultAioHttpClient
from holysheep._clients.limited_calls import ClientLimitsMixin
from holysheep._core.call_plan import CallPlan
from holysheep._core.client_options import ClientOptions, check_option_names
from holysheep._core.config import DEFAULT_TIMEOUT, ClientConfig, OnRetry, TimeoutTypes, check_headers, make_config
from holysheep._core.fallback import CircuitBreaker, Router
from holysheep._core.keys import mask_key
from holysheep._core.log import setup_logging
from holysheep._core.option_checks import check_choice, http2_backend
from holysheep._core.request import RequestSpec
from holysheep._core.sentinels import given as given_options
from holysheep._core.sentinels import is_not_given, or_default
from holysheep._transports.backends import LazyPool

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from holysheep._core.call import Call
    from holysheep.cache import ResponseCache

__all__ = ["BaseClient", "LazyPool"]


NO_HIT: tuple[None, None] = (None, None)
"""What a call with the response cache off looks up: no key, no hit."""

_Self = TypeVar("_Self", bound="BaseClient[Any, Any]")
_HttpClientT = TypeVar("_HttpClientT")
_BackendT = TypeVar("_BackendT", bound=str)


def quiet_build(cls: Any, **kwargs: object) -> Any:
    """``cls(**kwargs)`` without repeating the construction warnings its original already gave (a copy, or a
    batch's clone of a client)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**kwargs)


def _check_fallback_args(fallbacks: object, circuit_breaker: object) -> None:
    from holysheep._exceptions import InvalidRequestError

    if fallbacks is not None and not isinstance(fallbacks, (list, tuple)):
        raise InvalidRequestError(f"fallbacks must be a list of holysheep.Fallback, got {type(fallbacks).__name__}.",
                                  field="fallbacks")
    if circuit_breaker is not None and not isinstance(circuit_breaker, CircuitBreaker):
        raise InvalidRequestError(f"circuit_breaker must be a holysheep.CircuitBreaker, got "
                                  f"{type(circuit_breaker).__name__}.", field="circuit_breaker")


def config_kwargs(config: ClientConfig) -> dict[str, Any]:
    """``__init__`` keyword arguments that rebuild ``config`` (the key included: keep the dict private)."""
    c = config
    return {
        "api_key": c.api_key.reveal() or "",  # "": a keyless client must not pick up HOLYSHEEP_API_KEY
        "base_url": str(c.base_url), "timeout": c.timeout, "max_retries": c.max_retries,
        "default_headers": dict(c.default_headers), "initial_retry_delay": c.initial_retry_delay,
        "max_retry_delay": c.max_retry_delay, "max_retry_after": c.max_retry_after,
        "stream_idle_timeout": c.stream_idle_timeout, "allow_insecure_http": c.allow_insecure_http,
        "on_retry": c.on_retry, "max_response_bytes": c.max_response_bytes,
        "max_sse_event_bytes": c.max_sse_event_bytes, "max_stream_text_bytes": c.max_stream_text_bytes,
        "tool_threads": c.tool_threads, "hooks": c.hooks, "proxy": c.network.proxy,
        "trust_env": c.network.trust_env, "verify": c.network.verify, "cert": c.network.cert,
        "http2": c.network.http2, "default_query": dict(c.default_query) or None,
    }


class BaseClient(ClientLimitsMixin, Generic[_HttpClientT, _BackendT]):
    """Configuration holder behind ``holysheep.Client`` and ``holysheep.AsyncClient``."""

    _config: ClientConfig
    _owns_http: bool
    _closed: bool = False
    _backend: object
    _http_client_type: ClassVar[type]
    _http_backends: ClassVar[tuple[str, ...]]  # the first is the default

    def __init_subclass__(cls, *, http_client_type: type | None = None, http_backends: tuple[str, ...] = (),
                          **kwargs: object) -> None:
        """A client class names the ``http_client`` type it takes and the backends it can send with (a
        subclass of ``Client`` or ``AsyncClient`` keeps its parent's)."""
        super().__init_subclass__(**kwargs)
        if http_client_type is not None:
            cls._http_client_type = http_client_type
        if http_backends:
            cls._http_backends = http_backends

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        default_headers: Mapping[str, str | None] | None = None,
        http_client: _HttpClientT | None = None,
        **options: Unpack[ClientOptions[_BackendT]],
    ) -> None:
        """Check every setting (no request is sent) and open a connection pool lazily.

        Args:
            api_key: An ``hs_`` key; defaults to ``HOLYSHEEP_API_KEY``. Never shown in a repr, log or error.
            base_url: Defaults to ``HOLYSHEEP_BASE_URL`` or ``https://api.holysheep.ai/v1``.
            timeout: Per attempt: seconds or an ``httpx.Timeout`` (or ``httpx2.Timeout``).
            max_retries: Retries after the first attempt (``0`` turns retries off).
            default_headers: Sent with every request; a ``None`` value removes a header.
            http_client: Your own ``httpx.Client`` (for ``Client``) or ``httpx.AsyncClient`` (for ``AsyncClient``),
                or httpx2's (``holysheep[httpx2]``), e.g. for event hooks. Used as it is and not closed by the
                client; ``proxy``, ``verify`` and ``cert`` do not apply to it (and an ``AsyncClient`` given one sends
                with it, not aiohttp).
            **options: Keyword-only, each explained in ``ClientOptions``: ``initial_retry_delay=0.5``,
                ``max_retry_delay=8.0``, ``max_retry_after=60.0``, ``stream_idle_timeout=300.0``,
                ``allow_insecure_http=False``, ``on_retry=None``, ``fallbacks=None``, ``circuit_breaker=None``,
                ``max_response_bytes`` (64 MiB), ``max_sse_event_bytes`` (16 MiB), ``max_stream_text_bytes``
                (64 MiB), ``tool_threads=64``, ``hooks=None``, ``cache=None`` (a
                response cache file or store: repeated requests are answered from it), ``proxy=None`` (else the
                environment's proxies), ``trust_env=True``, ``verify=True``, ``cert=None``, ``http2=False`` (offer
                HTTP/2; httpx only, needs ``holysheep[http2]``), ``default_query=None`` (query parameters added to every
                request, as openai's), ``max_cost_usd=None`` with ``prices=None`` (a spend cap on every request the
                client, its copies, ``as_openai()`` and its batches send: ``SpendCapError`` before any I/O when one
                does not fit; see ``docs/spend.md``) and ``http_backend`` (``AsyncClient``: ``"aiohttp"``
                or ``"httpx"``, and ``"httpx"`` when ``http2=True``; ``Client``: ``"httpx"``). A misspelt one is a
                ``TypeError`` that names the closest.
        """
        setup_logging()
        api_key, base_url, default_headers, http_client = (  # NOT_GIVEN/omit (openai's too): not passed
            or_default(api_key, None), or_default(base_url, None), or_default(default_headers, None),
            or_default(http_client, None))
        timeout, max_retries = or_default(timeout, DEFAULT_TIMEOUT), or_default(max_retries, 2)
        settings: dict[str, Any] = dict(given_options(options))
        check_option_names(type(self).__name__, settings)
        fallbacks = settings.pop("fallbacks", None)
        circuit_breaker = settings.pop("circuit_breaker", None)
        if isinstance(http_client, DefaultAioHttpClient):  # openai's way to ask for aiohttp
            if "aiohttp" not in self._http_backends:
                from holysheep._exceptions import InvalidRequestError

                raise InvalidRequestError(f"DefaultAioHttpClient() is for AsyncClient; {type(self).__name__} sends "
                                          "with httpx (pass DefaultHttpxClient() or leave http_client out).",
                                          field="http_client")
            http_client, settings["http_backend"] = None, "aiohttp"
        backend_given = "http_backend" in settings
        http_backend = settings.pop("http_backend", self._http_backends[0])
        cache = settings.pop("cache", None)
        max_cost_usd, prices = settings.pop("max_cost_usd", None), settings.pop("prices", None)
        self._config = make_config(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
                                   default_headers=default_headers, **settings)
        check_choice(http_backend, "http_backend", tuple(sorted(self._http_backends)))
        if self._config.network.http2:
            http_backend = http2_backend(http_backend, backend_given, http_client is not None)
            if self._config.base_url.scheme == "http":
                warn_plain_http2()
        kind = self._http_client_type
        given = http_client
        if http_client is not None and not isinstance(http_client, kind):  # an httpx2 client: sent through it
            from holysheep._transports.httpx2_bridge import wrap_http_client

            http_client = wrap_http_client(http_client)  # type: ignore[assignment]
        if http_client is not None and not isinstance(http_client, kind):
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError(
                f"http_client must be an {kind.__module__}.{kind.__qualname__} (or httpx2's {kind.__qualname__}), got "
                f"{type(http_client).__name__}.",
                field="http_client",
            )
        if http_client is not None:
            warn_if_tls_unverified(given)
            import dataclasses

            # proxy=, verify= and cert= do not apply to a caller's client: TLS errors name its own store
            network = dataclasses.replace(self._config.network, ca_source="the http_client's own (its verify=)")
            self._config = self._config.replace(network=network)
        elif self._config.network.verify is False:
            warn_unverified("verify=False")
        _check_fallback_args(fallbacks, circuit_breaker)
        self._owns_http = http_client is None
        self._http_client = http_client
        self._fallbacks = tuple(fallbacks or ())
        self._router = Router(self._config, list(fallbacks), circuit_breaker) if fallbacks else None
        self._cache: ResponseCache | None = None
        self._owns_cache = False
        if cache is not None:
            from holysheep.cache import ResponseCache, open_cache  # lazy: `import holysheep` loads no sqlite3

            self._cache = open_cache(cache)
            self._owns_cache = not isinstance(cache, ResponseCache)
        self._init_limits(max_cost_usd, prices)
        self._backend = self._open_backend(http_client, http_backend)
        self._bind_resources()

    def _open_backend(self, http_client: _HttpClientT | None, http_backend: str) -> object:  # pragma: no cover
        raise NotImplementedError

    def _init_kwargs(self) -> dict[str, object]:
        return {**config_kwargs(self._config), "fallbacks": self._fallbacks or None,
                "circuit_breaker": self._router.breaker if self._router is not None else None,
                "cache": self._cache}  # a copy shares the cache and does not close it

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache (``cache=``), or None."""
        return self._cache

    def _cache_lookup(self, spec: RequestSpec) -> tuple[str | None, object]:
        """The response cache's key for ``spec`` and its hit (``ResponseCache.lookup``, on this client's
        clock); the shells ask it only when a cache is on."""
        assert self._cache is not None
        return self._cache.lookup(spec, self._config)

    def _cache_save(self, key: str, result: object, call: Call | None = None) -> None:
        """Store a call's result under the key its lookup gave, or the fallback's own when ``call`` (the one that
        answered) went to a fallback (``ResponseCache.save``: completions only)."""
        assert self._cache is not None
        self._cache.save(key, result, call)

    def _close_cache(self) -> None:
        if self._cache is not None:
            if self._owns_cache:
                self._cache.close()
            else:
                self._cache.flush()

    def _check_open(self) -> None:
        """Raise `ClientClosedError` when this client's connection pool was closed."""
        if getattr(self._backend, "closed", False):
            from holysheep._exceptions import ClientClosedError

            raise ClientClosedError

    @property
    def config(self) -> ClientConfig:
        """The validated, immutable configuration (its key is a ``SecretKey``)."""
        return self._config

    @property
    def has_fallbacks(self) -> bool:
        """Whether fallbacks are configured (their circuit breaker lives in this client)."""
        return self._router is not None

    @property
    def has_custom_http_client(self) -> bool:
        """Whether an ``http_client`` was passed in (then it is used as it is)."""
        return self._http_client is not None

    def _use_clock(self, clock: Callable[[], float]) -> None:
        """Test seam (private): read every time a call measures (``elapsed_s``, ``StreamMetrics``, the hook
        events' ``elapsed_s``) from ``clock`` (monotonic seconds) instead of ``time.perf_counter``. Copies made
        by ``with_options`` and ``AsyncClient.from_config`` keep it; fallbacks share it."""
        self._config = self._config.replace(clock=clock)
        if self._router is not None:
            self._router = Router(self._config, list(self._fallbacks), self._router.breaker)

    def plan(self, spec: RequestSpec, *, idempotency_key: str | None = None) -> CallPlan:
        """A ``CallPlan`` for ``spec`` on this client: its retry policy, hook and fallbacks."""
        return CallPlan(self._config, spec, self._router, idempotency_key=idempotency_key)

    @property
    def base_url(self) -> httpx.URL:
        """The API base URL (always ends with ``/``)."""
        return self._config.base_url

    @property
    def api_key(self) -> str:
        """The API key, as openai-python's ``client.api_key`` (``""`` for a keyless client). Never shown in a
        repr, log or error: handle it as a secret."""
        return self._config.api_key.reveal() or ""

    def is_closed(self) -> bool:
        """True once this client was closed (``close()``/``aclose()`` or the end of its ``with`` block; a
        caller's ``http_client`` stays open, as the client does not own it) or its connection pool was."""
        return self._closed or bool(getattr(self._backend, "closed", False))

    @property
    def default_query(self) -> dict[str, Any]:
        """Query parameters added to every request (``default_query=``)."""
        return dict(self._config.default_query)

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
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes | object = ...,
        http_client: _HttpClientT | None = None,
        max_retries: int | None = None,
        initial_retry_delay: float | None = None,
        max_retry_delay: float | None = None,
        stream_idle_timeout: float | object | None = ...,
        default_headers: Mapping[str, str | None] | None = None,
        set_default_headers: Mapping[str, str | None] | None = None,
        default_query: Mapping[str, object] | None = None,
        set_default_query: Mapping[str, object] | None = None,
        on_retry: OnRetry | None = None,
        hooks: Sequence[object] | None = None,
        max_cost_usd: float | None = None,
        prices: Mapping[str, object] | None = None,
    ) -> _Self:
        """A copy with some options changed (openai-python's ``with_options``/``copy``). It shares this client's
        connection pool (closing the copy does not close the pool) unless ``http_client`` gives it another.
        ``default_headers``/``default_query`` are merged into this client's; ``set_default_headers`` /
        ``set_default_query`` replace them. It keeps this client's hooks unless ``hooks`` replaces them, and
        spends from this client's ``max_cost_usd`` budget unless ``max_cost_usd`` gives it a budget of its own
        (at ``prices``, or this client's)."""
        timeout = ... if is_not_given(timeout) else timeout  # NOT_GIVEN/omit (openai's too): not passed
        stream_idle_timeout = ... if is_not_given(stream_idle_timeout) else stream_idle_timeout
        api_key, base_url, http_client, max_retries = (or_default(api_key, None), or_default(base_url, None),
                                                       or_default(http_client, None), or_default(max_retries, None))
        if default_headers is not None and set_default_headers is not None:
            raise ValueError("The `default_headers` and `set_default_headers` arguments are mutually exclusive")
        if default_query is not None and set_default_query is not None:
            raise ValueError("The `default_query` and `set_default_query` arguments are mutually exclusive")
        kwargs = self._init_kwargs()
        if api_key is not None:
            kwargs["api_key"] = api_key
        if base_url is not None:
            kwargs["base_url"] = str(base_url)
        if timeout is not ...:
            kwargs["timeout"] = timeout
        if stream_idle_timeout is not ...:
            kwargs["stream_idle_timeout"] = stream_idle_timeout
        for name, value in (("max_retries", max_retries), ("initial_retry_delay", initial_retry_delay),
                            ("max_retry_delay", max_retry_delay), ("on_retry", on_retry), ("hooks", hooks)):
            if value is not None:
                kwargs[name] = value
        if default_headers is not None:
            kwargs["default_headers"] = {**self._config.default_headers,
                                         **check_headers("default_headers", default_headers)}
        if set_default_headers is not None:
            kwargs["default_headers"] = dict(check_headers("set_default_headers", set_default_headers))
        if default_query is not None:
            kwargs["default_query"] = {**self._config.default_query, **default_query}
        if set_default_query is not None:
            kwargs["default_query"] = dict(set_default_query)
        if prices is not None and max_cost_usd is None:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError("with_options(prices=...) goes with max_cost_usd= (a copy with a budget of its "
                                      "own); without it the copy spends from this client's budget at its prices.",
                                      field="prices")
        if max_cost_usd is not None:
            kwargs["max_cost_usd"], kwargs["prices"] = max_cost_usd, prices if prices is not None else self._prices
        cls: object = type(self)
        new: _Self = quiet_build(cls, **kwargs, http_client=http_client or self._http_client)  # all checked
        if max_cost_usd is None:
            self._share_limits(new)
        else:
            new._limit_clocks = self._limit_clocks
        if http_client is None:
            new._backend = self._backend  # share the connection pool; the copy does not own it
            new._owns_http = False
        if new._config.clock is not self._config.clock:
            new._use_clock(self._config.clock)
        return new

    copy = with_options

    def _bind_resources(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        """Fallback use and the primary's circuit state (empty counters when no fallbacks are set)."""
        router = self._router
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

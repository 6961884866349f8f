"""The keyword options `Client` and `AsyncClient` share, typed once (``**options: Unpack[ClientOptions]``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from typing_extensions import TypedDict

from holysheep._core.config import OnRetry
from holysheep._core.fallback import CircuitBreaker, Fallback
from holysheep._core.network import CertTypes, VerifyTypes

__all__ = ["ClientOptions", "check_option_names"]

_BackendT = TypeVar("_BackendT", bound=str)


class ClientOptions(TypedDict, Generic[_BackendT], total=False):
    """Keyword-only options of `Client` and `AsyncClient`; every one may be left out.

    Write a wrapper that forwards them with full type checking:
    `def make_client(**options: Unpack[ClientOptions[Literal["httpx"]]]) -> Client: return Client(**options)`.
    """

    initial_retry_delay: float
    """Seconds before the first retry (default `0.5`); doubles per retry, minus up to 25 % jitter."""
    max_retry_delay: float
    """Upper bound of one backoff delay in seconds (default `8.0`)."""
    max_retry_after: float
    """The longest server `Retry-After` honoured, in seconds (default `60.0`); a longer one is raised to you
    with `e.retry_after`."""
    stream_idle_timeout: float | None
    """Seconds a stream may go without an event before `StreamIdleTimeoutError` (default `300.0`; `None`: no
    limit). It replaces `timeout`'s read limit once a stream's headers have arrived."""
    allow_insecure_http: bool
    """Allow sending a key over plain `http://` to a host that is not loopback (default `False`)."""
    on_retry: OnRetry | None
    """Called as `on_retry(attempt, error, delay)` before each retry sleep (default `None`)."""
    fallbacks: Sequence[Fallback] | None
    """Endpoints tried in order when the primary fails over (default `None`); see `docs/fallback.md`."""
    circuit_breaker: CircuitBreaker | None
    """The primary's circuit breaker when `fallbacks` are set (default: a `CircuitBreaker()`)."""
    max_response_bytes: int
    """The largest response body read, in bytes (default 64 MiB, after decompression); a larger one fails
    with a typed error."""
    max_sse_event_bytes: int
    """The largest single server-sent event of a stream, in bytes (default 16 MiB)."""
    max_stream_text_bytes: int
    """The most text one stream keeps (content, reasoning, refusals and tool calls, UTF-8 bytes; default
    64 MiB); past it the stream fails with `StreamTooLargeError`, its `partial_text` cut at the cap."""
    tool_threads: int
    """Tool calls (`run_tools`, batch agents) running at once in the SDK's own threads (default 64). A call
    past its `tool_timeout` no longer counts against it."""
    cache: object
    """A response cache (default `None`: off): a file path (an SQLite file, created when missing), a
    `holysheep.cache.CacheStore` or a `ResponseCache`. A repeated non-streamed chat request is answered from
    it without a request (`response.cached`); only completions that answered are stored; see `docs/spend.md`."""
    proxy: str | None
    """Send every request through this proxy (``http://user:pass@proxy:3128``; credentials are never shown).
    Default: the environment's ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``/``NO_PROXY`` (with ``trust_env``).
    Loopback hosts are always reached directly."""
    trust_env: bool
    """Read proxies and ``SSL_CERT_FILE``/``SSL_CERT_DIR`` from the environment (default `True`)."""
    verify: VerifyTypes
    """TLS verification: `True` (certifi's CA bundle, or `SSL_CERT_FILE`/`SSL_CERT_DIR`), a CA bundle path, an
    `ssl.SSLContext`, or `False` (warns: anyone on the path can read your key)."""
    cert: CertTypes | None
    """A client certificate for servers that ask for one (mTLS): a PEM path with the certificate and key, or
    `(cert_file, key_file)` or `(cert_file, key_file, password)`."""
    http_backend: _BackendT
    """What sends the requests: `Client` always uses `"httpx"`; `AsyncClient` uses `"aiohttp"` (default)
    or `"httpx"` (an `http_client=` passed in is always used as it is). With `http2=True` it is `"httpx"`."""
    http2: bool
    """Offer HTTP/2 (by TLS ALPN) on the SDK's own httpx pool (default `False`). Needs the `h2` package
    (`pip install "holysheep[http2]"`). On `AsyncClient` it selects `http_backend="httpx"` (aiohttp speaks
    HTTP/1.1 only); `http_backend="aiohttp"` or an `http_client=` with it is an `InvalidRequestError`.
    See `docs/performance.md` for when it helps."""
    default_query: Mapping[str, Any] | None
    """Query parameters added to every request's URL (openai's ``default_query``; default `None`)."""
    max_cost_usd: float | None
    """A spend cap in USD for everything the client sends (default `None`: no cap): each request's worst case
    (from its final body, at `prices`) is reserved before it is sent and settled with the reply's usage; one that
    does not fit raises `SpendCapError` before any I/O. Copies, `as_openai()` and batches share it; see
    `docs/spend.md`."""
    prices: Mapping[str, object] | None
    """USD per million tokens by model for `max_cost_usd` (`{"model": (input_per_m, output_per_m)}`; default:
    the price catalog). A model with no price under a cap is an `InvalidRequestError` before any I/O."""
    hooks: Sequence[object] | None
    """Objects told about every call, stream, batch item and tool call (`holysheep.Hooks` subclasses; default
    `None`); kept by `with_options`, the batch and fallbacks. See `docs/observability.md`."""


def check_option_names(client: str, options: dict[str, object]) -> None:
    """A misspelt keyword is a `TypeError` naming the closest option, as Python says for a plain signature."""
    unknown = sorted(set(options) - set(ClientOptions.__optional_keys__))
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], sorted(ClientOptions.__optional_keys__), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise TypeError(f"{client}() got an unexpected keyword argument {unknown[0]!r}{hint}")

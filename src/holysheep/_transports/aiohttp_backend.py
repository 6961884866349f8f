"""The aiohttp backend: the default transport of ``AsyncClient`` (``http_backend="aiohttp"``).

httpx's async pool scans every connection on each request, which costs more CPU per request as the
number in flight grows; aiohttp's connector does not. This backend sends the ``httpx.Request`` the
core built through an ``aiohttp.ClientSession`` and hands back an ``httpx.Response``, mapping aiohttp's
errors onto httpx's so the shared retry and streaming code sees one error vocabulary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from holysheep._core.call import RawResponse
from holysheep._core.network import DEFAULT_NETWORK, NetworkSettings, proxy_for
from holysheep._exceptions import ClientClosedError, RedirectRefusedError
from holysheep._transports._private_access import aiohttp_acquired, aiohttp_close_now, aiohttp_raise_limit
from holysheep._transports.body import read_aiohttp_body
from holysheep._transports.redirects import REDIRECT_STATUSES, redirect_refusal, same_origin
from holysheep._transports.tls import ssl_context

if TYPE_CHECKING:
    from holysheep._core.call import Call

__all__ = ["AiohttpBackend"]

_DROP = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})
_DROP_STREAM = frozenset({b"content-length", b"transfer-encoding"})
MAX_REDIRECTS = 10
_CROSS_ORIGIN_DROP = ("authorization", "cookie", "proxy-authorization")


_SKIP = ("User-Agent", "Content-Type")


def _skip(headers: dict[str, str], body: bytes | None) -> tuple[str, ...] | None:
    """The auto headers aiohttp must not add: None when the SDK's own are there (the usual case)."""
    return None if "user-agent" in headers and ("content-type" in headers or body is None) else _SKIP


def _basic_auth(aiohttp: Any, user: str, password: str) -> str:
    encode = getattr(aiohttp, "encode_basic_auth", None)  # aiohttp >= 3.14; BasicAuth is deprecated there
    if encode is not None:
        value: str = encode(user, password)
        return value
    return str(aiohttp.BasicAuth(user, password).encode())


def _map_error(exc: BaseException, request: httpx.Request) -> httpx.TransportError:
    import asyncio

    import aiohttp

    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(str(exc) or "connect timed out", request=request)
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return httpx.ReadTimeout(str(exc) or "read timed out", request=request)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(exc), request=request)
    if isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError)):
        return httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request)
    return httpx.ReadError(str(exc) or type(exc).__name__, request=request)


class _AioStream(httpx.AsyncByteStream):
    def __init__(self, response: Any, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import asyncio

        import aiohttp

        try:
            async for data in self._response.content.iter_any():
                yield data
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise _map_error(exc, self._request) from exc

    async def aclose(self) -> None:
        self._response.close()


class AiohttpBackend:
    """Sends httpx requests with aiohttp. Created lazily inside the running loop; close with ``aclose``."""

    def __init__(self, *, max_connections: int = 1000, network: NetworkSettings = DEFAULT_NETWORK) -> None:
        self._aiohttp: Any = None  # imported on first use: `import holysheep` and AsyncClient() stay light
        self._max_connections = max_connections
        self._network = network
        self._proxies: dict[str, tuple[object, object]] = {}
        self._session: Any = None
        self.closed = False
        self._timeouts: dict[tuple[object, ...], object] = {}
        self._urls: dict[str, object] = {}
        self._yarl_url: Any = None

    def __del__(self) -> None:
        # A client dropped without aclose() (a module-level client at exit, as in openai's README): close the
        # pool's sockets quietly, as httpx does, instead of aiohttp's "Unclosed client session / connector".
        session = self._session
        if session is not None and not self.closed:
            aiohttp_close_now(session.connector)  # sync: closes the transports; marks the session closed

    def prepare(self) -> None:
        """Open the session (imports, TLS context) if it is not open: the client calls this before an attempt's
        clock starts, so a first stream's time to first token does not include the set-up."""
        if self._session is None and not self.closed:
            self._open()

    def _open(self) -> Any:
        import aiohttp
        import yarl

        self._aiohttp = aiohttp
        self._yarl_url = yarl.URL
        # The client's own TLS context (certifi or SSL_CERT_FILE/SSL_CERT_DIR, verify=, cert=), the same one
        # its httpx transports use; proxies come from `proxy_for` per URL (trust_env stays off in aiohttp).
        connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0, ttl_dns_cache=300,
                                         ssl=ssl_context(self._network))
        # auto_decompress=False: bodies are inflated by holysheep's bounded decoder (max_response_bytes,
        # SSE caps), so a compression bomb never expands in full. Redirects are followed by `_redirected`
        # under holysheep's policy (a trace hook would cost CPU on every request, redirected or not).
        # No session-wide skip_auto_headers: aiohttp would build a header set from it on every request.
        # The SDK's headers carry User-Agent and Content-Type; `_skip` covers a caller who removed them.
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        return self._session

    def _proxy(self, url: str) -> tuple[object, object]:
        """``(proxy, proxy_headers)`` for a request to ``url`` (``(None, None)``: direct), worked out once per URL."""
        value = self._proxies.get(url)
        if value is None:
            proxy = proxy_for(self._network, httpx.URL(url))
            value = (None, None)
            if proxy is not None:
                parsed = self._yarl_url(proxy)
                headers = None
                if parsed.user is not None:  # sent to the proxy only; the URL without them is what aiohttp shows
                    headers = {"Proxy-Authorization": _basic_auth(self._aiohttp, parsed.user, parsed.password or "")}
                    parsed = parsed.with_user(None)
                value = (parsed, headers)
            if len(self._proxies) >= 256:
                self._proxies.clear()
            self._proxies[url] = value
        return value

    def ensure_connections(self, n: int) -> None:
        """Let the pool hold at least ``n`` connections (a batch at ``concurrency=n``); never lowers it."""
        if n <= self._max_connections:
            return
        self._max_connections = n
        connector = getattr(self._session, "connector", None)
        if connector is not None:  # already open: aiohttp reads its limit per acquire
            aiohttp_raise_limit(connector, n)

    def _url(self, url: str) -> Any:
        value = self._urls.get(url)
        if value is None:  # parsed once per URL, not on every request
            if len(self._urls) >= 256:
                self._urls.clear()
            value = self._urls[url] = self._yarl_url(url)
        return value

    def _timeout(self, call: Call) -> object:
        timeout = call.timeout
        read = timeout.read
        if read is not None and not call.spec.stream and call.deadline_s is not None and read >= call.deadline_s:
            # The attempt's deadline (within_deadline, armed by the client around send) ends it no later than
            # this per-read limit would, so aiohttp need not re-arm a timer on every read.
            read = None
        key = (timeout.connect, read, timeout.pool)
        value = self._timeouts.get(key)
        if value is None:
            value = self._aiohttp.ClientTimeout(total=None, sock_connect=key[0], sock_read=key[1], connect=key[2])
            self._timeouts[key] = value
        return value

    async def send(self, call: Call) -> httpx.Response | RawResponse:
        """Send the call's attempt (begun by the shell). A 2xx reply read here comes back as a light
        ``RawResponse``; a 2xx ``lazy_body`` (unread) and errors (read in full) as ``httpx.Response``."""
        import asyncio

        if self.closed:
            raise ClientClosedError
        session = self._session or self._open()
        lazy = call.lazy_body  # a 2xx body handed over unread (a stream, or with_streaming_response)
        aiohttp = self._aiohttp
        try:
            timeout = self._timeout(call)
            data = call.content
            if self._network.routes:  # proxies configured: the route for this URL (None: direct)
                proxy, proxy_headers = self._proxy(call.url)
                resp = await session.request(call.method, self._url(call.url), data=data, headers=call.headers,
                                             timeout=timeout, allow_redirects=False, proxy=proxy,
                                             proxy_headers=proxy_headers,
                                             skip_auto_headers=_skip(call.headers, data))
            else:  # no proxy keywords at all: aiohttp builds a header dict for proxy_headers even when None
                resp = await session.request(call.method, self._url(call.url), data=data, headers=call.headers,
                                             timeout=timeout, allow_redirects=False,
                                             skip_auto_headers=_skip(call.headers, data))
            if resp.status in REDIRECT_STATUSES:
                resp = await self._redirected(session, call, resp, timeout)
            limit = call.config.max_response_bytes
            if not lazy and resp.status < 400:
                return RawResponse(resp.status, resp.headers, await read_aiohttp_body(resp, limit))
            request = call.httpx_request()
            if lazy and resp.status < 400:  # raw bytes: the shell inflates them (bounded) as the caller reads
                headers = [(k, v) for k, v in resp.raw_headers if k.lower() not in _DROP_STREAM]
                return httpx.Response(resp.status, headers=headers, stream=_AioStream(resp, request),
                                      request=request)
            headers = [(k, v) for k, v in resp.raw_headers if k.lower() not in _DROP]
            content = await read_aiohttp_body(resp, limit)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise _map_error(exc, call.httpx_request()) from exc
        return httpx.Response(resp.status, headers=headers, content=content, request=request)

    async def _redirected(self, session: Any, call: Call, resp: Any, timeout: object) -> object:
        """Follow redirects like aiohttp would (303, and 301/302 of a POST, become a GET without a body;
        credentials are dropped across origins), refusing what `redirect_refusal` refuses."""
        method, url, data, headers = call.method, call.url, call.content, call.headers
        for _ in range(MAX_REDIRECTS):
            location = resp.headers.get("Location") or resp.headers.get("URI")
            if resp.status not in REDIRECT_STATUSES or not location:
                return resp
            source = httpx.URL(url)
            try:
                target = source.join(location)
            except Exception:
                resp.close()
                raise httpx.RemoteProtocolError(f"the server redirected to an unusable Location {location!r}",
                                                request=call.httpx_request()) from None
            reason = redirect_refusal(method, source, target)
            if reason is not None:
                resp.close()
                raise RedirectRefusedError(reason)
            if target.scheme not in ("http", "https"):
                resp.close()
                raise httpx.UnsupportedProtocol(f"the server redirected to a {target.scheme!r} URL",
                                                request=call.httpx_request())
            resp.release()
            if (resp.status == 303 and method != "HEAD") or (resp.status in (301, 302) and method == "POST"):
                method, data = "GET", None
                headers = {k: v for k, v in headers.items() if k not in ("content-type", "content-length")}
            if not same_origin(source, target):
                headers = {k: v for k, v in headers.items() if k not in _CROSS_ORIGIN_DROP}
            url = str(target)
            proxy, proxy_headers = self._proxy(url) if self._network.routes else (None, None)
            resp = await session.request(method, url, data=data, headers=headers, timeout=timeout,
                                         allow_redirects=False, proxy=proxy, proxy_headers=proxy_headers,
                                         skip_auto_headers=_skip(headers, data))
        resp.close()
        raise httpx.TooManyRedirects(f"the server redirected more than {MAX_REDIRECTS} times",
                                     request=call.httpx_request())

    def in_use(self) -> int:
        """Connections checked out of the connector (0 once every response is released)."""
        connector = getattr(self._session, "connector", None)
        return aiohttp_acquired(connector) if connector is not None else 0

    async def aclose(self) -> None:
        """Close the aiohttp session and its connections (later sends raise `ClientClosedError`)."""
        self.closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

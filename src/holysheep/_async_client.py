"""The asynchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ._aiohttp_backend import AiohttpBackend
from ._base_client import BaseClient, LazyPool
from ._call import Call
from ._config import DEFAULT_LIMITS, DEFAULT_TIMEOUT, OnRetry, TimeoutTypes
from ._exceptions import APIError, InvalidRequestError
from ._fallback import CircuitBreaker, Fallback
from ._request import RequestSpec
from ._streaming import AsyncStream
from .resources.account import BaseModels, BaseQuota
from .resources.chat import BaseChat, BaseCompletions
from .types.account import Model, Quota
from .types.chat import ChatCompletion, ChatCompletionChunk

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Callable, Iterable

    from .batch import BatchIterator, BatchResult, BatchResults, BatchStats

__all__ = ["AsyncClient"]


class AsyncCompletions(BaseCompletions[Coroutine[Any, Any, ChatCompletion],
                                       Coroutine[Any, Any, AsyncStream[ChatCompletionChunk]]]):
    """``client.chat.completions`` for the async client (``create`` returns an awaitable)."""

    async def batch(
        self,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        model: str | None = None,
        concurrency: int = 16,
        rpm: float | None = None,
        tpm: float | None = None,
        progress: Any = False,
        max_retries: int = 5,
        retry_budget: float | None = 0.2,
        adaptive: bool = True,
        check_quota: bool = True,
        require_quota: bool = False,
        on_result: Callable[[BatchResult], None] | None = None,
        on_progress: Callable[[BatchStats], None] | None = None,
        **params: Any,
    ) -> BatchResults:
        """Run many chat completions concurrently; one result per input, in input order.

        Same arguments and behaviour as the sync ``Client.chat.completions.batch``. Cancelling the
        awaiting task cancels what is in flight and re-raises ``CancelledError``; use `batch_iter`
        or ``on_result=`` to keep results as they complete. See ``docs/batch.md``.
        """
        from .batch._api import abatch  # lazy: `import holysheep` does not load the batch engine

        return await abatch(
            self._client, requests, model=model, concurrency=concurrency, rpm=rpm, tpm=tpm, progress=progress,  # type: ignore[arg-type]
            max_retries=max_retries, retry_budget=retry_budget, adaptive=adaptive, check_quota=check_quota,
            require_quota=require_quota, on_result=on_result, on_progress=on_progress, **params,
        )

    def batch_iter(
        self,
        requests: Iterable[Any] | AsyncIterable[Any],
        *,
        model: str | None = None,
        concurrency: int = 16,
        rpm: float | None = None,
        tpm: float | None = None,
        progress: Any = False,
        max_retries: int = 5,
        retry_budget: float | None = 0.2,
        adaptive: bool = True,
        check_quota: bool = True,
        require_quota: bool = False,
        on_result: Callable[[BatchResult], None] | None = None,
        on_progress: Callable[[BatchStats], None] | None = None,
        **params: Any,
    ) -> BatchIterator:
        """Like `batch`, but yields each `BatchResult` as it completes
        (``result.index`` is its input position). Reads ``requests`` (any iterable or async iterable)
        lazily with bounded read-ahead. Use ``async with`` or ``aclose()`` if you may stop early.
        """
        from .batch._api import abatch_iter  # lazy

        return abatch_iter(
            self._client, requests, model=model, concurrency=concurrency, rpm=rpm, tpm=tpm, progress=progress,  # type: ignore[arg-type]
            max_retries=max_retries, retry_budget=retry_budget, adaptive=adaptive, check_quota=check_quota,
            require_quota=require_quota, on_result=on_result, on_progress=on_progress, **params,
        )


class AsyncChat(BaseChat[AsyncCompletions]):
    """``client.chat`` for the async client."""


class AsyncModels(BaseModels[Coroutine[Any, Any, list[Model]]]):
    """``client.models`` for the async client."""


class AsyncQuotaResource(BaseQuota[Coroutine[Any, Any, Quota]]):
    """``client.quota`` for the async client."""


class AsyncClient(BaseClient):
    """Asynchronous HolySheep client (``httpx.AsyncClient``); use ``async with`` or ``await aclose()``.

    ``api_key`` defaults to ``HOLYSHEEP_API_KEY`` and ``base_url`` to ``HOLYSHEEP_BASE_URL`` or
    ``https://api.holysheep.ai/v1``. ``timeout`` is per attempt (seconds or ``httpx.Timeout``);
    ``max_retries`` counts retries after the first attempt.
    """

    chat: AsyncChat
    models: AsyncModels
    quota: AsyncQuotaResource

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        default_headers: Mapping[str, str | None] | None = None,
        http_client: httpx.AsyncClient | None = None,
        *,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        max_retry_after: float = 60.0,
        stream_idle_timeout: float | None = None,
        allow_insecure_http: bool = False,
        on_retry: OnRetry | None = None,
        fallbacks: Sequence[Fallback] | None = None,
        circuit_breaker: CircuitBreaker | None = None,
        http_backend: Literal["httpx", "aiohttp"] = "httpx",
    ) -> None:
        self._init_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=default_headers, initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay, max_retry_after=max_retry_after,
            stream_idle_timeout=stream_idle_timeout, allow_insecure_http=allow_insecure_http,
            on_retry=on_retry, fallbacks=fallbacks, circuit_breaker=circuit_breaker,
            http_client=http_client, http_client_type=httpx.AsyncClient,
        )
        self._aiohttp: AiohttpBackend | None = None
        if http_backend == "aiohttp":
            if http_client is not None:
                raise InvalidRequestError("Pass either http_client= or http_backend='aiohttp', not both.",
                                          field="http_backend")
            try:
                self._aiohttp = AiohttpBackend(max_connections=DEFAULT_LIMITS.max_connections or 1000)
            except ImportError:
                raise InvalidRequestError("http_backend='aiohttp' needs aiohttp: pip install 'holysheep[aiohttp]'.",
                                          field="http_backend") from None
        elif http_backend != "httpx":
            raise InvalidRequestError(f"http_backend must be 'httpx' or 'aiohttp', got {http_backend!r}.",
                                      field="http_backend")
        config = self._config
        self._pool: LazyPool[httpx.AsyncClient] = LazyPool(
            http_client,
            lambda: httpx.AsyncClient(timeout=config.timeout, limits=DEFAULT_LIMITS, follow_redirects=True))
        self._bind_resources()

    @property
    def _http(self) -> httpx.AsyncClient:
        return self._pool.get()

    def _bind_resources(self) -> None:
        self.chat = AsyncChat(AsyncCompletions(self))
        self.models = AsyncModels(self)
        self.quota = AsyncQuotaResource(self)

    async def _execute(self, spec: RequestSpec) -> Any:
        router = self._router
        if router is None:
            return await self._attempts(Call(self._config, spec))
        endpoints = router.plan()
        last = len(endpoints) - 1
        for i, endpoint in enumerate(endpoints):
            config = self._config if endpoint is router.primary else endpoint.config
            call = Call(config, endpoint.prepare(spec))
            call.served_by = endpoint.name
            try:
                result = await self._attempts(call)
            except APIError as err:
                if router.failed(endpoint, err, i == last):
                    continue
                raise
            router.succeeded(endpoint)
            return result
        raise AssertionError("unreachable: the last endpoint either returns or raises")  # pragma: no cover

    async def _attempts(self, call: Call) -> Any:
        """One endpoint: attempts with retries until a result or a final error."""
        spec = call.spec
        aio = self._aiohttp
        http = self._http if aio is None else None  # with aiohttp, the httpx pool is never built
        while True:
            request: httpx.Request | None = None
            try:
                if aio is not None:
                    call.begin_attempt()
                    response = await aio.send(call, stream=spec.stream)
                else:
                    assert http is not None
                    request = call.next_request(http if self._custom_http else None)
                    response = await http.send(request, stream=spec.stream)
                if spec.stream and response.status_code >= 400:
                    assert isinstance(response, httpx.Response)
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except httpx.RequestError as exc:
                outcome = call.on_transport_error(exc, request or call.httpx_request())
            else:
                outcome = call.on_response(response)
            if outcome.retry:
                import asyncio  # lazy: keeps `import holysheep` light

                await asyncio.sleep(outcome.delay)
                continue
            if outcome.error is not None:
                raise outcome.error from outcome.cause
            if spec.stream:
                stream: AsyncStream[Any] = AsyncStream(outcome.value, call)
                empty = await stream._prime()  # a stream that ends before its first event lost nothing: retry it
                if empty is None:
                    return stream
                outcome = call.on_empty_stream(empty)
                if outcome.retry:
                    import asyncio

                    await asyncio.sleep(outcome.delay)
                    continue
                raise empty
            return outcome.value

    async def aclose(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``)."""
        if self._owns_http:
            if self._pool.created:
                await self._http.aclose()
            if self._aiohttp is not None:
                await self._aiohttp.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

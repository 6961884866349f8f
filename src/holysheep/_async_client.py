"""The asynchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from types import TracebackType
from typing import Any

import httpx

from ._base_client import BaseClient
from ._call import Call
from ._config import DEFAULT_LIMITS, DEFAULT_TIMEOUT, OnRetry, TimeoutTypes
from ._request import RequestSpec
from ._streaming import AsyncStream
from .resources.account import BaseModels, BaseQuota
from .resources.chat import BaseChat, BaseCompletions
from .types.account import Model, Quota
from .types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["AsyncClient"]


class AsyncCompletions(BaseCompletions[Coroutine[Any, Any, ChatCompletion],
                                       Coroutine[Any, Any, AsyncStream[ChatCompletionChunk]]]):
    """``client.chat.completions`` for the async client (``create`` returns an awaitable)."""


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
    ) -> None:
        self._init_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=default_headers, initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay, max_retry_after=max_retry_after,
            stream_idle_timeout=stream_idle_timeout, allow_insecure_http=allow_insecure_http,
            on_retry=on_retry, http_client=http_client, http_client_type=httpx.AsyncClient,
        )
        self._http = http_client or httpx.AsyncClient(timeout=self._config.timeout, limits=DEFAULT_LIMITS,
                                                 follow_redirects=True)
        self._owns_http = http_client is None
        self._bind_resources()

    def _bind_resources(self) -> None:
        self.chat = AsyncChat(AsyncCompletions(self))
        self.models = AsyncModels(self)
        self.quota = AsyncQuotaResource(self)

    async def _execute(self, spec: RequestSpec) -> Any:
        call = Call(self._config, spec)
        http = self._http
        while True:
            request = call.next_request(http)
            try:
                response = await http.send(request, stream=spec.stream)
                if spec.stream and response.status_code >= 400:
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except httpx.RequestError as exc:
                outcome = call.on_transport_error(exc, request)
            else:
                outcome = call.on_response(response)
            if outcome.retry:
                await asyncio.sleep(outcome.delay)
                continue
            if outcome.error is not None:
                raise outcome.error from outcome.cause
            if spec.stream:
                return AsyncStream(outcome.value, call)
            return outcome.value

    async def aclose(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``)."""
        if self._owns_http:
            await self._http.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

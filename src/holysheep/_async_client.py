"""The asynchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ._aiohttp_backend import AiohttpBackend
from ._backends import AsyncBackend, AsyncHttpxBackend, attempt_outcome
from ._base_client import BaseClient, config_kwargs
from ._call import Call, Outcome
from ._config import DEFAULT_LIMITS, DEFAULT_TIMEOUT, ClientConfig, OnRetry, TimeoutTypes
from ._fallback import CircuitBreaker, Fallback
from ._limits import DEFAULT_MAX_RESPONSE_BYTES, within_deadline
from ._option_checks import check_choice
from ._request import RequestSpec
from ._sse import DEFAULT_MAX_SSE_BYTES
from ._streaming import AsyncStream
from .resources.account import BaseModels, BaseQuota
from .resources.chat import BaseChat, BaseCompletions
from .resources.structured import AsyncParse
from .types.account import Model, Quota
from .types.chat import ChatCompletion, ChatCompletionChunk

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Iterable

    from typing_extensions import Unpack

    from ._batch_params import BatchParams
    from ._sender import AsyncSender
    from .batch import BatchIterator, BatchResults

__all__ = ["AsyncClient"]


async def _sleep(seconds: float) -> None:
    import asyncio  # lazy: keeps `import holysheep` light

    await asyncio.sleep(seconds)


class AsyncCompletions(AsyncParse, BaseCompletions[Coroutine[Any, Any, ChatCompletion],
                                                   Coroutine[Any, Any, AsyncStream[ChatCompletionChunk]]]):
    """``client.chat.completions`` for the async client (``create`` returns an awaitable)."""

    _client: AsyncClient

    async def batch(self, requests: Iterable[Any] | AsyncIterable[Any],
                    **params: Unpack[BatchParams]) -> BatchResults:
        """Run many chat completions concurrently; one result per input, in input order.

        Same arguments (``BatchParams``) and behaviour as the sync ``Client.chat.completions.batch``.
        Cancelling the awaiting task cancels what is in flight and re-raises ``CancelledError``; use
        ``batch_iter`` or ``on_result=`` to keep results as they complete. See ``docs/batch.md``.
        """
        from .batch._api import abatch  # lazy: `import holysheep` does not load the batch engine

        return await abatch(self._client, requests, params)

    def batch_iter(self, requests: Iterable[Any] | AsyncIterable[Any],
                   **params: Unpack[BatchParams]) -> BatchIterator:
        """Like ``batch``, but yields each ``BatchResult`` as it completes (``result.index`` is its input
        position). Reads ``requests`` (any iterable or async iterable) lazily with bounded read-ahead.
        Use ``async with`` or ``aclose()`` if you may stop early. Options are checked at once.
        """
        from .batch._api import abatch_iter  # lazy

        return abatch_iter(self._client, requests, params)


class AsyncChat(BaseChat[AsyncCompletions]):
    """``client.chat`` for the async client."""


class AsyncModels(BaseModels[Coroutine[Any, Any, list[Model]]]):
    """``client.models`` for the async client."""


class AsyncQuotaResource(BaseQuota[Coroutine[Any, Any, Quota]]):
    """``client.quota`` for the async client."""


class AsyncClient(BaseClient):
    """Asynchronous HolySheep client; use ``async with`` or ``await aclose()``.

    It sends with aiohttp by default (far less CPU per request than httpx's async pool at high
    concurrency); ``http_backend="httpx"`` selects httpx (the SDK shards its own pool into clients of
    at most 16 connections), and an ``http_client=httpx.AsyncClient(...)`` is used as it is.

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
        http_backend: Literal["httpx", "aiohttp"] = "aiohttp",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_event_bytes: int = DEFAULT_MAX_SSE_BYTES,
    ) -> None:
        self._init_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=default_headers, initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay, max_retry_after=max_retry_after,
            stream_idle_timeout=stream_idle_timeout, allow_insecure_http=allow_insecure_http,
            on_retry=on_retry, fallbacks=fallbacks, circuit_breaker=circuit_breaker,
            http_client=http_client, http_client_type=httpx.AsyncClient,
            max_response_bytes=max_response_bytes, max_sse_event_bytes=max_sse_event_bytes,
        )
        check_choice(http_backend, "http_backend", ("aiohttp", "httpx"))
        if http_backend == "aiohttp" and http_client is None:
            self._backend: AsyncBackend = AiohttpBackend(max_connections=DEFAULT_LIMITS.max_connections or 1000)
        else:  # an httpx http_client is always used as it is
            self._backend = AsyncHttpxBackend(http_client, self._config.timeout)
        self._bind_resources()

    @property
    def _http(self) -> httpx.AsyncClient:
        backend = self._backend
        if not isinstance(backend, AsyncHttpxBackend):
            raise AttributeError("this client sends with aiohttp (http_backend='aiohttp'); it has no httpx pool")
        return backend.first

    def _bind_resources(self) -> None:
        self.chat = AsyncChat(AsyncCompletions(self))
        self.models = AsyncModels(self)
        self.quota = AsyncQuotaResource(self)

    async def _execute(self, spec: RequestSpec) -> Any:
        plan = self.plan(spec)
        while (delay := plan.after(await self._attempt(plan.call))) is not None:
            await _sleep(delay)
        return AsyncStream(plan.result(), plan.call) if spec.stream else plan.result()

    async def _attempt(self, call: Call) -> Outcome:
        """Send one attempt of ``call`` and return the call's decision on it."""
        try:
            return attempt_outcome(call, await within_deadline(self._backend.send(call), call.deadline_s), None)
        except httpx.RequestError as exc:
            return attempt_outcome(call, None, exc)

    def sender(self) -> AsyncSender:
        """What the batch engine sends through: this client's plans and attempts, and its quota."""
        from ._sender import AsyncSender

        return AsyncSender(self)

    @classmethod
    def from_config(cls, config: ClientConfig, *, http_backend: Literal["httpx", "aiohttp"] = "aiohttp",
                    fallbacks: Sequence[Fallback] | None = None,
                    circuit_breaker: CircuitBreaker | None = None) -> AsyncClient:
        """A new ``AsyncClient`` (with its own connection pool) built from another client's ``config``."""
        kwargs = config_kwargs(config)
        return cls(**kwargs, fallbacks=fallbacks, circuit_breaker=circuit_breaker, http_backend=http_backend)


    async def aclose(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``)."""
        if self._owns_http:
            await self._backend.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

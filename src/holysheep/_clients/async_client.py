"""The asynchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, overload

import httpx
from typing_extensions import Unpack

from holysheep._clients.base_client import NO_HIT, BaseClient, config_kwargs, quiet_build
from holysheep._clients.limited_calls import run_limited_async
from holysheep._clients.resources.account import AsyncModelPager, BaseModels, BaseQuota
from holysheep._clients.resources.chat import BaseChat, BaseCompletions, Beta, coroutine_method
from holysheep._clients.resources.embeddings import BaseEmbeddings, RequestParams
from holysheep._clients.resources.stream_helper import AsyncStreamHelper
from holysheep._clients.resources.structured import AsyncParse
from holysheep._clients.resources.tools import AsyncRunTools
from holysheep._clients.resources.wire import AsyncWireResource
from holysheep._clients.streamed_response import AsyncStreamedAPIResponse, raw_reply
from holysheep._clients.streaming import AsyncStream
from holysheep._core.call import Call, Outcome
from holysheep._core.closing import AsyncClosing
from holysheep._core.config import DEFAULT_LIMITS, ClientConfig
from holysheep._core.fallback import CircuitBreaker, Fallback
from holysheep._core.raw_response import RAW, RawMode, response_as
from holysheep._core.request import RequestSpec, generic_spec
from holysheep._transports.aiohttp_backend import AiohttpBackend
from holysheep._transports.backends import AsyncBackend, AsyncHttpxBackend, attempt_outcome
from holysheep._transports.deadlines import within_deadline
from holysheep.types.account import Model, Quota
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk
from holysheep.types.embeddings import CreateEmbeddingResponse

_T = TypeVar("_T")

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Iterable

    import openai

    from holysheep._clients.resources.responses import AsyncResponses
    from holysheep._clients.senders import AsyncSender
    from holysheep._core.batch_params import BatchParams
    from holysheep._core.wire import WireFormat
    from holysheep._core.wire.base import WireReplyT, WireRunT
    from holysheep._engine.iterator import BatchIterator
    from holysheep._engine.results import BatchResults

__all__ = ["AsyncClient"]


async def _sleep(seconds: float) -> None:
    import asyncio  # lazy: keeps `import holysheep` light

    await asyncio.sleep(seconds)


class AsyncCompletions(AsyncRunTools, AsyncParse, AsyncStreamHelper,
                       BaseCompletions[Coroutine[Any, Any, ChatCompletion],
                                       Coroutine[Any, Any, AsyncStream[ChatCompletionChunk]]]):
    """``client.chat.completions`` for the async client (``create`` returns an awaitable)."""

    _client: AsyncClient

    if not TYPE_CHECKING:  # an `async def` to `inspect` (typed as the shared method: it returns a coroutine)
        create = coroutine_method(BaseCompletions.create)

    async def batch(self, requests: Iterable[Any] | AsyncIterable[Any],
                    **params: Unpack[BatchParams]) -> BatchResults:
        """Run many chat completions concurrently; one result per input, in input order.

        Same arguments (``BatchParams``) and behaviour as the sync ``Client.chat.completions.batch``.
        Cancelling the awaiting task cancels what is in flight and re-raises ``CancelledError``; use
        ``batch_iter`` or ``on_result=`` to keep results as they complete. See ``docs/batch.md``.
        """
        from holysheep._engine.run import abatch, with_client_cache  # lazy: not loaded by `import holysheep`

        self._client._check_open()
        return await abatch(self._client.sender(), requests, with_client_cache(params, self._client.cache,
                                                                          self._client._prices))

    def batch_iter(self, requests: Iterable[object] | AsyncIterable[object],
                   **params: Unpack[BatchParams]) -> BatchIterator:
        """Like ``batch``, but yields each ``BatchResult`` as it completes (``result.index`` is its input
        position). Reads ``requests`` (any iterable or async iterable) lazily with bounded read-ahead.
        Use ``async with`` or ``aclose()`` if you may stop early. Options are checked at once.
        """
        from holysheep._engine.run import iterator_for, with_client_cache  # lazy

        return iterator_for(self._client.sender(), requests, with_client_cache(params, self._client.cache,
                                                                          self._client._prices))


class AsyncChat(BaseChat[AsyncCompletions]):
    """``client.chat`` for the async client."""


class AsyncModels(BaseModels[AsyncModelPager, Coroutine[Any, Any, Model]]):
    """``client.models`` for the async client."""

    def list(self, **options: Unpack[RequestParams]) -> AsyncModelPager:
        """The models (``GET /models``): ``await`` it for the `ModelList` page, or ``async for`` over the models
        (as openai-python's ``AsyncPaginator``). Options as on the sync client."""
        fetch: Callable[..., Any] = super().list  # a coroutine on this client
        return AsyncModelPager(lambda: fetch(**options))

    if not TYPE_CHECKING:
        retrieve = coroutine_method(BaseModels.retrieve)


class AsyncEmbeddings(BaseEmbeddings[Coroutine[Any, Any, CreateEmbeddingResponse]]):
    """``client.embeddings`` for the async client."""

    if not TYPE_CHECKING:
        create = coroutine_method(BaseEmbeddings.create)


class AsyncQuotaResource(BaseQuota[Coroutine[Any, Any, Quota]]):
    """``client.quota`` for the async client."""

    if not TYPE_CHECKING:
        retrieve = coroutine_method(BaseQuota.retrieve)


if TYPE_CHECKING:  # httpx2 is optional (holysheep[httpx2]): its client is wrapped as httpx's
    import httpx2

    from holysheep._clients.http_clients import DefaultAioHttpClient

    _HttpClient = Union[httpx.AsyncClient, httpx2.AsyncClient, DefaultAioHttpClient]
else:
    _HttpClient = httpx.AsyncClient


class AsyncClient(AsyncClosing, BaseClient[_HttpClient, Literal["httpx", "aiohttp"]],
                  http_client_type=httpx.AsyncClient, http_backends=("aiohttp", "httpx")):
    """Asynchronous HolySheep client; use ``async with`` or ``await aclose()``.

    It sends with aiohttp by default (far less CPU per request than httpx's async pool at high
    concurrency); ``http_backend="httpx"`` selects httpx (the SDK spreads its requests over small pools of
    ``SHARD_CONNECTIONS`` connections each), and an ``http_client=httpx.AsyncClient(...)`` is used as it is.

    It takes the parameters of ``Client``; the keyword options are ``ClientOptions``.
    """

    chat: AsyncChat
    beta: Beta[AsyncChat]
    models: AsyncModels
    quota: AsyncQuotaResource
    embeddings: AsyncEmbeddings

    _backend: AsyncBackend

    def _open_backend(self, http_client: _HttpClient | None, http_backend: str) -> AsyncBackend:
        if http_backend == "aiohttp" and http_client is None:
            return AiohttpBackend(max_connections=DEFAULT_LIMITS.max_connections or 1000, network=self._config.network)
        assert http_client is None or isinstance(http_client, httpx.AsyncClient)  # httpx2's: wrapped by __init__
        return AsyncHttpxBackend(http_client, self._config.timeout,  # an httpx http_client is used as it is
                                 network=self._config.network)

    @property
    def _http(self) -> httpx.AsyncClient:
        backend = self._backend
        if not isinstance(backend, AsyncHttpxBackend):
            raise AttributeError("this client sends with aiohttp (http_backend='aiohttp'); it has no httpx pool")
        return backend.first

    def _bind_resources(self) -> None:
        self.chat = AsyncChat(AsyncCompletions(self))
        self.beta = Beta(self.chat)
        self.models = AsyncModels(self)
        self.quota = AsyncQuotaResource(self)
        self.embeddings = AsyncEmbeddings(self)

    def as_openai(self) -> openai.AsyncOpenAI:
        """A genuine ``openai.AsyncOpenAI`` whose requests go through this client (``holysheep[openai]``); see
        `Client.as_openai` and ``docs/frameworks.md``."""
        from holysheep._clients.openai_bridge import async_openai_client

        self._check_open()
        client: openai.AsyncOpenAI = async_openai_client(self)
        return client
    @functools.cached_property
    def responses(self) -> AsyncResponses:
        """``client.responses``: the Responses API (``create``, ``stream``, ``parse``, ``batch``; loaded on first
        use, so ``import holysheep`` does not load its types)."""
        from holysheep._clients.resources.responses import AsyncResponses

        return AsyncResponses(self)

    def wire(self, wire: WireFormat[WireReplyT, WireRunT]) -> AsyncWireResource[WireReplyT, WireRunT]:
        """A resource for any `WireFormat` (``holysheep._core.wire``): ``create(**arguments)`` and ``batch(...)``
        with this client's retries, rate limits, hooks, response cache and batch engine."""
        return AsyncWireResource(self, wire)

    async def _execute(self, spec: RequestSpec) -> Any:
        mode: RawMode = RAW.get() or ("raw" if spec.raw else "")  # spec.raw: post/get(cast_to=httpx.Response)
        if mode:
            return await self._execute_raw(spec, mode)
        key, hit = self._cache_lookup(spec) if self._cache is not None else NO_HIT  # (one test when off)
        if hit is not None:
            return hit
        plan = self.plan(spec)
        limits = self._guard()
        if limits is None:
            while (delay := plan.after(await self._attempt(plan.call))) is not None:
                await _sleep(delay)
            self._heard(plan.call)
            result = plan.result()  # a stream comes back already wrapped (and primed) by _attempt
        else:  # a cap, or the key's known limits: reserved and paced before each attempt
            result = await run_limited_async(plan, limits, self._attempt, _sleep)
        if key is not None:
            self._cache_save(key, result, plan.call)
        return result

    async def _execute_raw(self, spec: RequestSpec, mode: RawMode) -> object:
        """``with_raw_response`` (``mode="raw"``): the reply as an `APIResponse` (a stream's, around the primed
        stream). ``with_streaming_response`` (``"stream"``): a `AsyncStreamedAPIResponse` whose body is still unread
        (a non-2xx status was retried or raised first, as for the plain call)."""
        plan = self.plan(dataclasses.replace(spec, raw=mode))  # never from the response cache
        limits = self._guard()
        if limits is None:
            while (delay := plan.after(await self._attempt(plan.call))) is not None:
                await _sleep(delay)
            self._heard(plan.call)
            result = plan.result()
        else:
            result = await run_limited_async(plan, limits, self._attempt, _sleep)
        return raw_reply(result, plan.call, spec.stream, mode, AsyncStreamedAPIResponse)

    async def _attempt(self, call: Call) -> Outcome:
        """Send one attempt of ``call`` and return the call's decision on it."""
        if call.ctx is not None:
            self._check_open()  # a closed client reports no attempt to the hooks
        prepare = getattr(self._backend, "prepare", None)
        if prepare is not None:  # the transport's one-time set-up happens before the attempt's clock starts
            prepare()
        call.begin_attempt()
        try:
            if call.ctx is None or not call.ctx.wraps_send:
                response = await within_deadline(self._backend.send(call), call.deadline_s)
            else:
                with call.ctx.sending():  # e.g. the OTel span is current while the request goes out
                    response = await within_deadline(self._backend.send(call), call.deadline_s)
            outcome = attempt_outcome(call, response, None)
        except httpx.RequestError as exc:
            return attempt_outcome(call, None, exc)
        if call.spec.stream and outcome.error is None and not outcome.retry:
            stream: AsyncStream[Any] = AsyncStream(outcome.value, call)
            empty = await stream._prime()  # a stream that ends before its first event lost nothing: retry it
            if empty is not None:
                return call.on_empty_stream(empty)
            outcome.value = stream
        return outcome

    @overload
    async def post(self, path: str, *, body: Mapping[str, Any] | None = None, cast_to: type[_T],
             **options: Unpack[RequestParams]) -> _T: ...

    @overload
    async def post(self, path: str, *, body: Mapping[str, Any] | None = None, cast_to: None = None,
             **options: Unpack[RequestParams]) -> Any: ...

    async def post(self, path: str, *, body: Mapping[str, object] | None = None, cast_to: object = None,
             **options: Unpack[RequestParams]) -> Any:
        """POST ``body`` (JSON) to ``path`` under the base URL, for an endpoint the SDK has no method for
        (``client.post("/rerank", body={...}, cast_to=MyModel)``), with the client's key, retries and errors.
        ``cast_to``: a pydantic model or any type pydantic validates (default: the decoded JSON), or
        ``httpx.Response`` / ``httpx2.Response`` for the response itself (body read; errors still raise)."""
        spec = generic_spec("POST", path, body=body, cast_to=cast_to, params=options)
        result = await self._execute(spec)
        return response_as(result, cast_to) if spec.raw else result

    @overload
    async def get(self, path: str, *, cast_to: type[_T], **options: Unpack[RequestParams]) -> _T: ...

    @overload
    async def get(self, path: str, *, cast_to: None = None, **options: Unpack[RequestParams]) -> Any: ...

    async def get(self, path: str, *, cast_to: Any = None, **options: Unpack[RequestParams]) -> Any:
        """GET ``path`` under the base URL (query parameters: ``extra_query={...}``); like ``post``."""
        spec = generic_spec("GET", path, cast_to=cast_to, params=options)
        result = await self._execute(spec)
        return response_as(result, cast_to) if spec.raw else result

    def reserve_connections(self, n: int) -> None:
        """Let this client's own pool hold at least ``n`` connections (a batch at ``concurrency=n``); never
        lowered. A caller's ``http_client`` keeps its own limits."""
        ensure = getattr(self._backend, "ensure_connections", None)
        if ensure is not None:
            ensure(n)

    def sender(self) -> AsyncSender:
        """What the batch engine sends through: this client's plans and attempts, and its quota."""
        from holysheep._clients.senders import AsyncSender

        return AsyncSender(self)

    @classmethod
    def from_config(cls, config: ClientConfig, *, http_backend: Literal["httpx", "aiohttp"] | None = None,
                    fallbacks: Sequence[Fallback] | None = None,
                    circuit_breaker: CircuitBreaker | None = None) -> AsyncClient:
        """A new ``AsyncClient`` (with its own connection pool) built from another client's ``config``."""
        kwargs = config_kwargs(config)
        if http_backend is not None:  # left out: the default (aiohttp; httpx when the config has http2=True)
            kwargs["http_backend"] = http_backend
        client: AsyncClient = quiet_build(cls, **kwargs, fallbacks=fallbacks, circuit_breaker=circuit_breaker)
        if client._config.clock is not config.clock:
            client._use_clock(config.clock)
        return client


    async def aclose(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``) and the
        response cache it opened."""
        self._close_cache()
        self._closed = True
        if self._owns_http:
            await self._backend.aclose()

    async def close(self) -> None:
        """The same as ``aclose()``."""
        await self.aclose()

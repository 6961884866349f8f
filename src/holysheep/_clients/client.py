"""The synchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, overload

import httpx
from typing_extensions import Unpack

from holysheep._clients.base_client import NO_HIT, BaseClient
from holysheep._clients.limited_calls import run_limited
from holysheep._clients.resources.account import BaseModels, BaseQuota
from holysheep._clients.resources.chat import BaseChat, BaseCompletions, Beta
from holysheep._clients.resources.embeddings import BaseEmbeddings, RequestParams
from holysheep._clients.resources.stream_helper import SyncStreamHelper
from holysheep._clients.resources.structured import SyncParse
from holysheep._clients.resources.tools import SyncRunTools
from holysheep._clients.resources.wire import WireResource
from holysheep._clients.streamed_response import StreamedAPIResponse, raw_reply
from holysheep._clients.streaming import Stream
from holysheep._core.call import Call, Outcome
from holysheep._core.closing import SyncClosing
from holysheep._core.raw_response import RAW, RawMode, response_as
from holysheep._core.request import RequestSpec, generic_spec
from holysheep._transports.backends import SyncHttpxBackend, attempt_outcome
from holysheep.types.account import Model, ModelList, Quota
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk
from holysheep.types.embeddings import CreateEmbeddingResponse

_T = TypeVar("_T")

if TYPE_CHECKING:
    from collections.abc import Iterable

    import openai

    from holysheep._clients.resources.responses import Responses
    from holysheep._clients.senders import ThreadSender
    from holysheep._core.batch_params import BatchParams
    from holysheep._core.wire import WireFormat
    from holysheep._core.wire.base import WireReplyT, WireRunT
    from holysheep._engine.results import BatchResults
    from holysheep._engine.sender import Sender

__all__ = ["Client"]


class Completions(SyncRunTools, SyncParse, SyncStreamHelper,
                  BaseCompletions[ChatCompletion, Stream[ChatCompletionChunk]]):
    """``client.chat.completions`` for the sync client."""

    _client: Client

    def batch(self, requests: Iterable[Any], **params: Unpack[BatchParams]) -> BatchResults:
        """Run many chat completions concurrently; one result per input, in input order.

        ``requests``: prompt strings, message lists, or dicts of ``create()`` parameters (optionally with
        ``"custom_id"``, or OpenAI Batch API lines); a bare string or one dict is refused. ``params`` are
        the batch options of ``BatchParams`` (``concurrency``, ``rpm``, ``tpm``, ``retry_budget``, ...) and
        defaults for every item (``model``, ``max_tokens``, ...), all checked before any request.
        Retries follow this client's policy and ``on_retry`` hook (``max_retries`` overrides per batch);
        a 429 pauses the whole batch and halves concurrency (``adaptive``); retries beyond the budget's
        share are paced, never refused; an outage, a 401 or exhausted quota stops the batch (unfinished
        items end with ``BatchUnfinishedError``). Runs on a private event loop in a worker thread, so it
        also works inside Jupyter; Ctrl-C raises ``BatchInterrupted`` carrying the partial results.
        See ``docs/batch.md``.
        """
        from holysheep._engine.run import batch_sync, with_client_cache  # lazy: not loaded by `import holysheep`

        self._client._check_open()  # as create() does: a closed client sends nothing, its batch included
        return batch_sync(self._client.batch_sender, requests, with_client_cache(params, self._client.cache,
                                                                          self._client._prices))


class Chat(BaseChat[Completions]):
    """``client.chat`` for the sync client."""


class Models(BaseModels[ModelList, Model]):
    """``client.models`` for the sync client."""


class Embeddings(BaseEmbeddings[CreateEmbeddingResponse]):
    """``client.embeddings`` for the sync client."""


class QuotaResource(BaseQuota[Quota]):
    """``client.quota`` for the sync client."""


if TYPE_CHECKING:  # httpx2 is optional (holysheep[httpx2]): its client is wrapped as httpx's
    import httpx2

    _HttpClient = Union[httpx.Client, httpx2.Client]
else:
    _HttpClient = httpx.Client


class Client(SyncClosing, BaseClient[_HttpClient, Literal["httpx"]],
             http_client_type=httpx.Client, http_backends=("httpx",)):
    """Synchronous HolySheep client (plain ``httpx.Client``: safe inside Jupyter's running loop).

    Its keyword options are ``ClientOptions`` (``http_backend`` can only be ``"httpx"`` here).
    """

    chat: Chat
    beta: Beta[Chat]
    models: Models
    quota: QuotaResource
    embeddings: Embeddings

    _backend: SyncHttpxBackend

    def _open_backend(self, http_client: _HttpClient | None, http_backend: str) -> SyncHttpxBackend:
        assert http_client is None or isinstance(http_client, httpx.Client)  # httpx2's was wrapped by __init__
        return SyncHttpxBackend(http_client, self._config.timeout, self._config.network)

    @property
    def _http(self) -> httpx.Client:
        return self._backend.pool.get()

    def _bind_resources(self) -> None:
        self.chat = Chat(Completions(self))
        self.beta = Beta(self.chat)
        self.models = Models(self)
        self.quota = QuotaResource(self)
        self.embeddings = Embeddings(self)

    @functools.cached_property
    def responses(self) -> Responses:
        """``client.responses``: the Responses API (``create``, ``stream``, ``parse``, ``batch``; loaded on first
        use, so ``import holysheep`` does not load its types)."""
        from holysheep._clients.resources.responses import Responses

        return Responses(self)

    def wire(self, wire: WireFormat[WireReplyT, WireRunT]) -> WireResource[WireReplyT, WireRunT]:
        """A resource for any `WireFormat` (``holysheep._core.wire``): ``create(**arguments)`` and ``batch(...)``
        with this client's retries, rate limits, hooks, response cache and batch engine."""
        return WireResource(self, wire)

    def _execute(self, spec: RequestSpec) -> Any:
        mode: RawMode = RAW.get() or ("raw" if spec.raw else "")  # spec.raw: post/get(cast_to=httpx.Response)
        if mode:
            return self._execute_raw(spec, mode)
        key, hit = self._cache_lookup(spec) if self._cache is not None else NO_HIT  # (one test when off)
        if hit is not None:
            return hit
        plan = self.plan(spec)
        limits = self._guard()
        if limits is None:
            while (delay := plan.after(self._attempt(plan.call))) is not None:
                time.sleep(delay)
            self._heard(plan.call)
            result = plan.result()  # a stream comes back already wrapped (and primed) by _attempt
        else:  # a cap, or the key's known limits: reserved and paced before each attempt
            result = run_limited(plan, limits, self._attempt)
        if key is not None:
            self._cache_save(key, result, plan.call)
        return result

    def _execute_raw(self, spec: RequestSpec, mode: RawMode) -> object:
        """``with_raw_response`` (``mode="raw"``): the reply as an `APIResponse` (a stream's, around the primed
        stream). ``with_streaming_response`` (``"stream"``): a `StreamedAPIResponse` whose body is still unread
        (a non-2xx status was retried or raised first, as for the plain call)."""
        plan = self.plan(dataclasses.replace(spec, raw=mode))  # never from the response cache
        limits = self._guard()
        if limits is None:
            while (delay := plan.after(self._attempt(plan.call))) is not None:
                time.sleep(delay)
            self._heard(plan.call)
            result = plan.result()
        else:
            result = run_limited(plan, limits, self._attempt)
        return raw_reply(result, plan.call, spec.stream, mode, StreamedAPIResponse)

    def _attempt(self, call: Call) -> Outcome:
        """Send one attempt of ``call`` and return the call's decision on it."""
        if call.ctx is not None:
            self._check_open()  # a closed client reports no attempt to the hooks
        call.begin_attempt()
        try:
            if call.ctx is None or not call.ctx.wraps_send:
                response = self._backend.send(call)
            else:
                with call.ctx.sending():  # e.g. the OTel span is current while the request goes out
                    response = self._backend.send(call)
            outcome = attempt_outcome(call, response, None)
        except httpx.RequestError as exc:
            return attempt_outcome(call, None, exc)
        if call.spec.stream and outcome.error is None and not outcome.retry:
            stream: Stream[Any] = Stream(outcome.value, call)
            empty = stream._prime()  # a stream that ends before its first event lost nothing: retry it
            if empty is not None:
                return call.on_empty_stream(empty)
            outcome.value = stream
        return outcome

    @overload
    def post(self, path: str, *, body: Mapping[str, Any] | None = None, cast_to: type[_T],
             **options: Unpack[RequestParams]) -> _T: ...

    @overload
    def post(self, path: str, *, body: Mapping[str, Any] | None = None, cast_to: None = None,
             **options: Unpack[RequestParams]) -> Any: ...

    def post(self, path: str, *, body: Mapping[str, object] | None = None, cast_to: object = None,
             **options: Unpack[RequestParams]) -> Any:
        """POST ``body`` (JSON) to ``path`` under the base URL, for an endpoint the SDK has no method for
        (``client.post("/rerank", body={...}, cast_to=MyModel)``), with the client's key, retries and errors.
        ``cast_to``: a pydantic model or any type pydantic validates (default: the decoded JSON), or
        ``httpx.Response`` / ``httpx2.Response`` for the response itself (body read; errors still raise)."""
        spec = generic_spec("POST", path, body=body, cast_to=cast_to, params=options)
        result = self._execute(spec)
        return response_as(result, cast_to) if spec.raw else result

    @overload
    def get(self, path: str, *, cast_to: type[_T], **options: Unpack[RequestParams]) -> _T: ...

    @overload
    def get(self, path: str, *, cast_to: None = None, **options: Unpack[RequestParams]) -> Any: ...

    def get(self, path: str, *, cast_to: Any = None, **options: Unpack[RequestParams]) -> Any:
        """GET ``path`` under the base URL (query parameters: ``extra_query={...}``); like ``post``."""
        spec = generic_spec("GET", path, cast_to=cast_to, params=options)
        result = self._execute(spec)
        return response_as(result, cast_to) if spec.raw else result

    def as_openai(self) -> openai.OpenAI:
        """A genuine ``openai.OpenAI`` whose requests go through this client (``holysheep[openai]``), for code
        and frameworks that take an openai client (openai-agents, pydantic-ai, langchain-openai, instructor).

        Any endpoint openai-python calls goes out with this client's key, headers, retries (openai's own are
        off), hooks and OpenTelemetry spans, fallbacks and limits, on its connection pool; a final error status
        reaches openai, which raises its own typed error. Streams stream. See ``docs/frameworks.md``."""
        from holysheep._clients.openai_bridge import openai_client

        self._check_open()
        client: openai.OpenAI = openai_client(self)
        return client

    def sender(self, max_workers: int) -> ThreadSender:
        """What the batch engine sends through: this client's plans and attempts, each attempt run in a
        pool of ``max_workers`` threads (close it with ``await sender.aclose()``)."""
        from holysheep._clients.senders import ThreadSender

        return ThreadSender(self, max_workers)

    def batch_sender(self, concurrency: int) -> Sender:
        """How this client's batches send: an ``AsyncClient`` cloned from its config (its own pool, on the
        default fast transport), or, when the client was given its own ``http_client`` or has fallbacks, a
        thread pool over this client itself (so that transport, and its circuit breaker, are used)."""
        if self.has_custom_http_client or self.has_fallbacks:
            return self.sender(concurrency + 1)
        from holysheep._clients.async_client import AsyncClient  # lazy: the async transport loads on use
        from holysheep._clients.senders import AsyncSender

        clone = AsyncClient.from_config(self.config)
        self._share_limits(clone)  # the batch spends from this client's max_cost_usd
        return AsyncSender(clone, owns=True)

    def close(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``) and the
        response cache it opened."""
        self._close_cache()
        self._closed = True
        if self._owns_http:
            self._backend.close()

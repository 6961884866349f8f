"""The synchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from ._base_client import BaseClient, LazyPool
from ._call import Call
from ._config import DEFAULT_LIMITS, DEFAULT_TIMEOUT, OnRetry, TimeoutTypes
from ._exceptions import APIError
from ._fallback import CircuitBreaker, Fallback
from ._request import RequestSpec
from ._streaming import Stream
from .resources.account import BaseModels, BaseQuota
from .resources.chat import BaseChat, BaseCompletions
from .types.account import Model, Quota
from .types.chat import ChatCompletion, ChatCompletionChunk

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .batch import BatchResult, BatchResults, BatchStats

__all__ = ["Client"]


class Completions(BaseCompletions[ChatCompletion, Stream[ChatCompletionChunk]]):
    """``client.chat.completions`` for the sync client."""

    def batch(
        self,
        requests: Iterable[Any],
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

        ``requests``: prompt strings, message lists, or dicts of ``create()`` parameters (optionally with
        ``"custom_id"``, or OpenAI Batch API lines). ``model`` and ``**params`` (``max_tokens``, ...) are
        defaults for every item. At most ``concurrency`` requests are in flight; ``rpm``/``tpm`` pace
        requests and estimated tokens. Failures are retried batch-wide (``max_retries`` per item, within a
        ``retry_budget`` of 20 % extra requests); a 429 pauses the whole batch for its Retry-After and
        halves concurrency (AIMD, ``adaptive``); a 401 or exhausted quota stops the batch. ``progress=True``
        shows a bar. Runs on a private event loop in a worker thread, so it also works inside Jupyter;
        Ctrl-C raises `BatchInterrupted` carrying the partial results.
        See ``docs/batch.md``.
        """
        from .batch._api import batch_sync  # lazy: `import holysheep` does not load the batch engine

        return batch_sync(
            self._client, requests, model=model, concurrency=concurrency, rpm=rpm, tpm=tpm, progress=progress,  # type: ignore[arg-type]
            max_retries=max_retries, retry_budget=retry_budget, adaptive=adaptive, check_quota=check_quota,
            require_quota=require_quota, on_result=on_result, on_progress=on_progress, **params,
        )


class Chat(BaseChat[Completions]):
    """``client.chat`` for the sync client."""


class Models(BaseModels[list[Model]]):
    """``client.models`` for the sync client."""


class QuotaResource(BaseQuota[Quota]):
    """``client.quota`` for the sync client."""


class Client(BaseClient):
    """Synchronous HolySheep client (plain ``httpx.Client``: safe inside Jupyter's running loop).

    ``api_key`` defaults to ``HOLYSHEEP_API_KEY`` and ``base_url`` to ``HOLYSHEEP_BASE_URL`` or
    ``https://api.holysheep.ai/v1``. ``timeout`` is per attempt (seconds or ``httpx.Timeout``);
    ``max_retries`` counts retries after the first attempt.
    """

    chat: Chat
    models: Models
    quota: QuotaResource

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        default_headers: Mapping[str, str | None] | None = None,
        http_client: httpx.Client | None = None,
        *,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        max_retry_after: float = 60.0,
        stream_idle_timeout: float | None = None,
        allow_insecure_http: bool = False,
        on_retry: OnRetry | None = None,
        fallbacks: Sequence[Fallback] | None = None,
        circuit_breaker: CircuitBreaker | None = None,
    ) -> None:
        self._init_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=default_headers, initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay, max_retry_after=max_retry_after,
            stream_idle_timeout=stream_idle_timeout, allow_insecure_http=allow_insecure_http,
            on_retry=on_retry, fallbacks=fallbacks, circuit_breaker=circuit_breaker,
            http_client=http_client, http_client_type=httpx.Client,
        )
        config = self._config
        self._pool: LazyPool[httpx.Client] = LazyPool(
            http_client, lambda: httpx.Client(timeout=config.timeout, limits=DEFAULT_LIMITS, follow_redirects=True))
        self._bind_resources()

    @property
    def _http(self) -> httpx.Client:
        return self._pool.get()

    def _bind_resources(self) -> None:
        self.chat = Chat(Completions(self))
        self.models = Models(self)
        self.quota = QuotaResource(self)

    def _execute(self, spec: RequestSpec) -> Any:
        router = self._router
        if router is None:
            return self._attempts(Call(self._config, spec))
        endpoints = router.plan()
        last = len(endpoints) - 1
        for i, endpoint in enumerate(endpoints):
            config = self._config if endpoint is router.primary else endpoint.config
            call = Call(config, endpoint.prepare(spec))
            call.served_by = endpoint.name
            try:
                result = self._attempts(call)
            except APIError as err:
                if router.failed(endpoint, err, i == last):
                    continue
                raise
            router.succeeded(endpoint)
            return result
        raise AssertionError("unreachable: the last endpoint either returns or raises")  # pragma: no cover

    def _attempts(self, call: Call) -> Any:
        """One endpoint: attempts with retries until a result or a final error."""
        spec = call.spec
        http = self._http
        while True:
            request = call.next_request(http if self._custom_http else None)
            try:
                response = http.send(request, stream=spec.stream)
                if spec.stream and response.status_code >= 400:
                    try:
                        response.read()
                    finally:
                        response.close()
            except httpx.RequestError as exc:
                outcome = call.on_transport_error(exc, request)
            else:
                outcome = call.on_response(response)
            if outcome.retry:
                time.sleep(outcome.delay)
                continue
            if outcome.error is not None:
                raise outcome.error from outcome.cause
            if spec.stream:
                stream: Stream[Any] = Stream(outcome.value, call)
                empty = stream._prime()  # a stream that ends before its first event lost nothing: retry it
                if empty is None:
                    return stream
                outcome = call.on_empty_stream(empty)
                if outcome.retry:
                    time.sleep(outcome.delay)
                    continue
                raise empty
            return outcome.value

    def close(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``)."""
        if self._owns_http and self._pool.created:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

"""The synchronous client: a thin shell that sends the bytes the sans-I/O core prepares."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from ._base_client import BaseClient
from ._call import Call
from ._config import DEFAULT_LIMITS, DEFAULT_TIMEOUT, OnRetry, TimeoutTypes
from ._request import RequestSpec
from ._streaming import Stream
from .resources.account import BaseModels, BaseQuota
from .resources.chat import BaseChat, BaseCompletions
from .types.account import Model, Quota
from .types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["Client"]


class Completions(BaseCompletions[ChatCompletion, Stream[ChatCompletionChunk]]):
    """``client.chat.completions`` for the sync client."""


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
    ) -> None:
        self._init_config(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
            default_headers=default_headers, initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay, max_retry_after=max_retry_after,
            stream_idle_timeout=stream_idle_timeout, allow_insecure_http=allow_insecure_http,
            on_retry=on_retry, http_client=http_client, http_client_type=httpx.Client,
        )
        self._http = http_client or httpx.Client(timeout=self._config.timeout, limits=DEFAULT_LIMITS,
                                                 follow_redirects=True)
        self._owns_http = http_client is None
        self._bind_resources()

    def _bind_resources(self) -> None:
        self.chat = Chat(Completions(self))
        self.models = Models(self)
        self.quota = QuotaResource(self)

    def _execute(self, spec: RequestSpec) -> Any:
        call = Call(self._config, spec)
        http = self._http
        while True:
            request = call.next_request(http)
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
                return Stream(outcome.value, call)
            return outcome.value

    def close(self) -> None:
        """Close the connection pool (unless it was passed in or shared by ``with_options``)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

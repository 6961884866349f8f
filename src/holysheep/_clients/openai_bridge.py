"""``Client.as_openai()`` / ``AsyncClient.as_openai()``: a genuine openai-python client whose requests go through
holysheep.

openai-python builds each request (any path: chat completions, Responses, embeddings, models) and hands it to the
``httpx`` transport of its ``http_client``. Here that transport is holysheep's: `HolySheepTransport` turns the
request into a `RequestSpec` (`holysheep._core.bridge_request`) and runs it through the client's own call loop
(``_execute_raw``: its key and headers, retries, hooks and spans, fallbacks, size and time bounds, on its own
connection pool), then hands openai the final reply: the body (a stream's bytes as they arrive, never buffered)
or the final error status, which openai turns into its own typed error. openai's retries are off
(``max_retries=0``), so holysheep alone decides. Only public APIs of httpx and openai are used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

import httpx

from holysheep._clients.resources.chat import parse_chat_completion
from holysheep._clients.streamed_response import AsyncStreamedAPIResponse, StreamedAPIResponse
from holysheep._core.bridge_request import bridged_spec, reply_headers
from holysheep._core.embeddings import embedding_parser
from holysheep._core.json_check import load_json
from holysheep._core.raw_response import APIResponse
from holysheep._exceptions import APIConnectionError, APIStatusError, APITimeoutError

if TYPE_CHECKING:
    import types
    from collections.abc import Awaitable

    import openai

    from holysheep._core.config import ClientConfig
    from holysheep._core.raw_response import RawMode
    from holysheep._core.request import RequestSpec


class SyncSender(Protocol):
    """What the sync transport needs of a `Client`: its settings and its call loop."""

    @property
    def config(self) -> ClientConfig: ...
    def _check_open(self) -> None: ...
    def _execute_raw(self, spec: RequestSpec, mode: RawMode) -> object: ...


class AsyncSender(Protocol):
    """What the async transport needs of an `AsyncClient`."""

    @property
    def config(self) -> ClientConfig: ...
    def _check_open(self) -> None: ...
    def _execute_raw(self, spec: RequestSpec, mode: RawMode) -> Awaitable[object]: ...

__all__ = ["AsyncHolySheepTransport", "HolySheepTransport", "async_openai_client", "openai_client"]

KEY_PLACEHOLDER = "sent-by-holysheep"
"""The ``api_key`` the openai client holds: the real key stays in the holysheep client, which writes the
``Authorization`` header itself (openai's is dropped), so openai's logs and objects never see it."""


def _openai_module() -> types.ModuleType:
    try:
        import openai
    except ImportError as exc:
        from holysheep._engine.progress import MissingExtraError

        raise MissingExtraError("as_openai() needs openai-python, which is not installed: "
                                "pip install 'holysheep[openai]'.") from exc
    return openai


def parser_for(path: str) -> Callable[[bytes], object]:
    """How the client parses a reply from ``path`` (what its hooks and spans read: usage, model, id)."""
    if path == "chat/completions":
        return parse_chat_completion
    if path == "embeddings":
        return embedding_parser(False)
    return load_json


def _transport_error(exc: APIConnectionError, request: httpx.Request) -> httpx.TransportError:
    """What openai-python expects from a transport that failed (it maps these to its own errors)."""
    if isinstance(exc, APITimeoutError):
        return httpx.ReadTimeout(exc.message, request=request)
    return httpx.ConnectError(exc.message, request=request)


def _error_reply(exc: APIStatusError, request: httpx.Request) -> httpx.Response | None:
    """The final error status as a response (its body read, a key the server echoed masked), or None."""
    response = exc.response
    if response is None:
        return None
    return httpx.Response(exc.status_code, headers=reply_headers(response.headers), content=response.content,
                          request=request)


class _SyncBody(httpx.SyncByteStream):
    """A reply's body as the caller reads it, through holysheep's bounds (and its stream hooks)."""

    def __init__(self, reply: StreamedAPIResponse[object], request: httpx.Request) -> None:
        self._reply, self._request = reply, request
        self._taken = False

    def __iter__(self) -> Iterator[bytes]:
        if self._taken:  # openai drains a stream's body after its last event: nothing is left
            return
        self._taken = True
        try:
            yield from self._reply.iter_bytes()
        except APIConnectionError as exc:  # as httpx raises while a body is read: openai lets it through
            raise _transport_error(exc, self._request) from exc

    def close(self) -> None:
        self._reply.close()


class _AsyncBody(httpx.AsyncByteStream):
    """`_SyncBody` for the async client."""

    def __init__(self, reply: AsyncStreamedAPIResponse[object], request: httpx.Request) -> None:
        self._reply, self._request = reply, request
        self._taken = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._taken:
            return
        self._taken = True
        try:
            async for piece in self._reply.iter_bytes():
                yield piece
        except APIConnectionError as exc:
            raise _transport_error(exc, self._request) from exc

    async def aclose(self) -> None:
        await self._reply.close()


def _reply(status: int, headers: Mapping[str, str], request: httpx.Request, *, content: bytes = b"",
           stream: httpx.SyncByteStream | httpx.AsyncByteStream | None = None) -> httpx.Response:
    """The response openai reads: a body read whole (``content``) or handed over unread (``stream``)."""
    if stream is not None:
        return httpx.Response(status, headers=reply_headers(headers), stream=stream, request=request)
    return httpx.Response(status, headers=reply_headers(headers), content=content, request=request)


class HolySheepTransport(httpx.BaseTransport):
    """An httpx transport that sends every request through a holysheep `Client` (see the module's docstring).
    Closing it leaves the client open: the client owns its connection pool."""

    def __init__(self, client: SyncSender) -> None:
        self._client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        spec, lazy = bridged_spec(self._client.config, request.method, request.url, request.headers,
                                  request.read(), request.extensions.get("timeout"), parser_for)
        try:
            result = self._client._execute_raw(spec, "stream" if lazy else "raw")
        except APIStatusError as exc:
            reply = _error_reply(exc, request)
            if reply is None:
                raise
            return reply
        except APIConnectionError as exc:
            raise _transport_error(exc, request) from exc
        if isinstance(result, StreamedAPIResponse):
            return _reply(result.status_code, result.headers, request, stream=_SyncBody(result, request))
        assert isinstance(result, APIResponse)
        return _reply(result.status_code, result.headers, request, content=result.content)


class AsyncHolySheepTransport(httpx.AsyncBaseTransport):
    """`HolySheepTransport` for an `AsyncClient` (on either of its backends, aiohttp or httpx)."""

    def __init__(self, client: AsyncSender) -> None:
        self._client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        spec, lazy = bridged_spec(self._client.config, request.method, request.url, request.headers,
                                  await request.aread(), request.extensions.get("timeout"), parser_for)
        try:
            result = await self._client._execute_raw(spec, "stream" if lazy else "raw")
        except APIStatusError as exc:
            reply = _error_reply(exc, request)
            if reply is None:
                raise
            return reply
        except APIConnectionError as exc:
            raise _transport_error(exc, request) from exc
        if isinstance(result, AsyncStreamedAPIResponse):
            return _reply(result.status_code, result.headers, request, stream=_AsyncBody(result, request))
        assert isinstance(result, APIResponse)
        return _reply(result.status_code, result.headers, request, content=result.content)


def _settings(config: ClientConfig) -> dict[str, object]:
    """openai's settings: its key a placeholder, its retries off (httpx's client goes with them: openai 3 takes it
    as well as its own httpx2's)."""
    return {"api_key": KEY_PLACEHOLDER, "base_url": str(config.base_url), "timeout": config.timeout,
            "max_retries": 0}


def openai_client(client: SyncSender) -> openai.OpenAI:
    """An ``openai.OpenAI`` that sends through ``client`` (`Client.as_openai`)."""
    made: openai.OpenAI = _openai_module().OpenAI(**_settings(client.config),
                                                  http_client=httpx.Client(transport=HolySheepTransport(client)))
    return made


def async_openai_client(client: AsyncSender) -> openai.AsyncOpenAI:
    """An ``openai.AsyncOpenAI`` that sends through ``client`` (`AsyncClient.as_openai`)."""
    http = httpx.AsyncClient(transport=AsyncHolySheepTransport(client))
    made: openai.AsyncOpenAI = _openai_module().AsyncOpenAI(**_settings(client.config), http_client=http)
    return made

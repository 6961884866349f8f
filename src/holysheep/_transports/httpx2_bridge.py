"""httpx2 objects where openai-python 3.x users pass them: an ``httpx2.Client``/``AsyncClient`` as ``http_client=``
is wrapped as an httpx transport, so the rest of the SDK keeps speaking httpx (``httpx2.Timeout`` is read by
``normalize_timeout``, ``cast_to=httpx2.Response`` by ``raw_response.response_as``). httpx2 is an optional extra
(``holysheep[httpx2]``): it is imported only when one of its objects is handed in, never by ``import holysheep``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from holysheep._core.httpx2_types import is_httpx2

__all__ = ["AsyncHttpx2Transport", "Httpx2Transport", "wrap_http_client"]


def _error(exc: Exception, request: httpx.Request) -> httpx.RequestError:
    """httpx's exception of the same name (``ConnectError``, ``ReadTimeout``, ...), carrying ``request``."""
    for cls in type(exc).__mro__:
        mapped = getattr(httpx, cls.__name__, None)
        if isinstance(mapped, type) and issubclass(mapped, httpx.RequestError):
            return mapped(str(exc), request=request)
    return httpx.TransportError(str(exc), request=request)


def _request2(client: Any, request: httpx.Request) -> object:
    """The httpx2 request for ``request``, built by ``client`` (its default headers and cookies apply)."""
    import httpx2

    timeout = request.extensions.get("timeout")
    return client.build_request(request.method, str(request.url), headers=request.headers.multi_items(),
                                content=request.content, timeout=httpx2.Timeout(**timeout) if timeout else None)


def _response(response2: Any, request: httpx.Request, stream: httpx.SyncByteStream | httpx.AsyncByteStream
              ) -> httpx.Response:
    return httpx.Response(response2.status_code, headers=response2.headers.multi_items(), stream=stream,
                          request=request, extensions={"http_version": response2.http_version.encode(),
                                                       "reason_phrase": response2.reason_phrase.encode()})


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, response2: Any, request: httpx.Request) -> None:
        self._response = response2
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._response.iter_raw()
        except Exception as exc:
            if is_httpx2(exc, "RequestError"):
                raise _error(exc, self._request) from exc
            raise

    def close(self) -> None:
        self._response.close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, response2: Any, request: httpx.Request) -> None:
        self._response = response2
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._response.aiter_raw():
                yield piece
        except Exception as exc:
            if is_httpx2(exc, "RequestError"):
                raise _error(exc, self._request) from exc
            raise

    async def aclose(self) -> None:
        await self._response.aclose()


class Httpx2Transport(httpx.BaseTransport):
    """Sends each request with the caller's ``httpx2.Client`` (its auth, hooks, redirects and pool); the body
    comes back raw, as from any httpx transport. httpx2's errors become httpx's of the same name."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response2 = self.client.send(_request2(self.client, request), stream=True)
        except Exception as exc:
            if is_httpx2(exc, "RequestError"):
                raise _error(exc, request) from exc
            raise
        return _response(response2, request, _SyncBody(response2, request))

    def close(self) -> None:
        """The caller's client is theirs to close."""


class AsyncHttpx2Transport(httpx.AsyncBaseTransport):
    """`Httpx2Transport` for an ``httpx2.AsyncClient``."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response2 = await self.client.send(_request2(self.client, request), stream=True)
        except Exception as exc:
            if is_httpx2(exc, "RequestError"):
                raise _error(exc, request) from exc
            raise
        return _response(response2, request, _AsyncBody(response2, request))

    async def aclose(self) -> None:
        """The caller's client is theirs to close."""


def wrap_http_client(http_client: object) -> object:
    """An ``httpx2.Client``/``AsyncClient`` as the httpx client of the same kind that sends through it; any
    other object as it is (the client checks its type)."""
    if is_httpx2(http_client, "Client"):
        return httpx.Client(transport=Httpx2Transport(http_client), trust_env=False)
    if is_httpx2(http_client, "AsyncClient"):
        return httpx.AsyncClient(transport=AsyncHttpx2Transport(http_client), trust_env=False)
    return http_client

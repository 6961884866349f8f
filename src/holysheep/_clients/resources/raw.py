"""``resource.with_raw_response`` and ``resource.with_streaming_response`` (openai-python's names)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any

from holysheep._core.raw_response import RAW, RawMode

__all__ = ["RawResponseProxy", "StreamingResponseProxy"]


def _is_async(resource: Any) -> bool:
    return inspect.iscoroutinefunction(type(resource._client)._execute)


def _raw_call(resource: Any, method: Callable[..., Any], args: Any, kwargs: Any, mode: RawMode) -> object:
    if _is_async(resource):
        async def run() -> Any:
            token = RAW.set(mode)  # read by the client's shell when the request is sent
            try:
                return await method(*args, **kwargs)
            finally:
                RAW.reset(token)

        return run()
    token = RAW.set(mode)
    try:
        return method(*args, **kwargs)
    finally:
        RAW.reset(token)


class RawResponseProxy:
    """The resource's methods, returning an `APIResponse` (``headers``, ``status_code``, ``http_request``,
    ``elapsed``, ``retries_taken``, ``parse()``) instead of the parsed object; ``await`` them on async clients."""

    _mode: RawMode = "raw"
    _name = "with_raw_response"

    def __init__(self, resource: Any) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._resource, name)
        if name.startswith("_") or not callable(method) or name in ("batch", "batch_iter", "stream"):
            raise AttributeError(f"{self._name} has no {name!r}: it wraps single requests (create, parse, list, "
                                 "retrieve)")
        mode = self._mode
        return lambda *args, **kwargs: _raw_call(self._resource, method, args, kwargs, mode)


class _Managed:
    """``with`` / ``async with``: the request is sent on entry; the response is closed on exit (an unread body
    is not read: its connection is closed)."""

    def __init__(self, opener: Callable[[], Any]) -> None:
        self._open = opener
        self._response: Any = None

    def __enter__(self) -> Any:
        self._response = self._open()
        return self._response

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._response is not None:
            self._response.close()

    async def __aenter__(self) -> Any:
        self._response = await self._open()
        return self._response

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._response is not None:
            await self._response.close()


class _StreamingRaw(RawResponseProxy):
    _mode: RawMode = "stream"
    _name = "with_streaming_response"


class StreamingResponseProxy:
    """The resource's methods as context managers (``with`` / ``async with``) giving a `StreamedAPIResponse`
    (an `AsyncStreamedAPIResponse` on async clients): status and headers known, the body read only when asked
    (``read()``, ``parse()``, ``iter_bytes()``, ...), the connection closed on exit."""

    def __init__(self, resource: Any) -> None:
        self._raw = _StreamingRaw(resource)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._raw, name)
        return lambda *args, **kwargs: _Managed(lambda: method(*args, **kwargs))

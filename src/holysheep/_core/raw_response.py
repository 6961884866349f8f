"""``with_raw_response`` / ``with_streaming_response``: the HTTP response, parsed only when asked (no I/O here).

`BaseAPIResponse` holds what is known once the status line and headers have arrived (status, headers, the
masked request, timing, retries); `APIResponse` adds a body read up front (``with_raw_response``). The lazy
body of ``with_streaming_response`` is read by the client shells (``holysheep._clients.streamed_response``).
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

import httpx

from holysheep._core.body_chunks import text_decoder
from holysheep._core.built_response import decoded_response
from holysheep._core.json_check import load_json
from holysheep._core.parse_to import parse_to, stream_to
from holysheep._core.scrub import scrubbed_headers
from holysheep._exceptions import ResponseConsumedError

__all__ = ["RAW", "APIResponse", "BaseAPIResponse", "RawMode", "response_as", "wants_response"]

R = TypeVar("R")
_T = TypeVar("_T")
RawMode = Literal["", "raw", "stream"]
"""How a call's reply comes back: ``""`` parsed (the plain call), ``"raw"`` as an `APIResponse` with its body
read (``with_raw_response``), ``"stream"`` with its 2xx body left unread for the caller to pull
(``with_streaming_response``)."""
RAW: ContextVar[RawMode] = ContextVar("holysheep_raw_response", default="")
"""Set by ``with_raw_response`` / ``with_streaming_response`` around one call: the client's shell then sends a
``RequestSpec`` with this ``raw`` mode."""
_UNSET: Any = object()


class _Call(Protocol):
    """What an `APIResponse` needs from the call that produced it (a ``Call``)."""

    @property
    def api_key(self) -> str | None: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def retries_taken(self) -> int: ...
    def httpx_request(self) -> httpx.Request: ...
    def parse_body(self, response: object) -> object: ...


class BaseAPIResponse(Generic[R]):
    """What is known of a response once its status line and headers have arrived: ``status_code``,
    ``headers``, ``http_request`` (its key masked), ``url``, ``method``, ``elapsed`` (a ``timedelta``, to the
    headers), ``retries_taken`` and ``request_id``."""

    def __init__(self, status_code: int, headers: Mapping[str, str], *, call: _Call, value: Any = _UNSET) -> None:
        from holysheep._core.error_mapping import sanitized_request

        self.status_code = status_code
        self.headers = scrubbed_headers(headers)  # a key the server echoed in a header is masked
        self._call = call
        self.http_request: httpx.Request = sanitized_request(call.httpx_request(), call.api_key)
        self.elapsed = datetime.timedelta(seconds=call.elapsed)
        self.retries_taken: int = call.retries_taken
        self._value = value
        self._by_type: dict[object, object] = {}  # parse(to=...): parsed once per type

    def _as(self, to: object, content: bytes) -> object:
        """``content`` parsed as ``to`` (once per type)."""
        try:
            return self._by_type[to]
        except (KeyError, TypeError):  # TypeError: an unhashable ``to`` (then not kept)
            pass
        value = parse_to(to, status_code=self.status_code, headers=self.headers, content=content,
                         request=self.http_request, api_key=self._call.api_key)
        with contextlib.suppress(TypeError):
            self._by_type[to] = value
        return value

    def _stream_as(self, to: object) -> object:
        """``parse(to=...)`` of a ``stream=True`` response: its stream, when ``to`` is the stream's class."""
        return stream_to(self._value, to)

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id``."""
        value: str | None = self.headers.get("x-request-id")
        return value

    @property
    def http_response(self) -> httpx.Response:
        """The response as an ``httpx.Response`` (openai-python's ``raw.http_response``): status, headers, the
        masked request and, once read, the body (a ``stream=True`` response's events come from ``parse()``)."""
        return decoded_response(httpx.Response, self.status_code, headers=self.headers,  # decoded already
                                content=getattr(self, "_content", None) or b"", request=self.http_request)

    @property
    def url(self) -> httpx.URL:
        """The URL the request went to."""
        return self.http_request.url

    @property
    def method(self) -> str:
        """The request's HTTP method."""
        return self.http_request.method

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [{self.status_code}] {self.http_request.method} {self.http_request.url}>"


class APIResponse(BaseAPIResponse[R]):
    """One call's HTTP response (``with_raw_response``): the facts of `BaseAPIResponse`, the body (``content``,
    ``text``, ``json()``, read before the response was handed over), and ``parse()``: the object the plain
    call would have returned (a stream, for ``stream=True``)."""

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes | None, *, call: _Call,
                 value: Any = _UNSET) -> None:
        super().__init__(status_code, headers, call=call, value=value)
        self._content = content

    @property
    def content(self) -> bytes:
        """The body. A ``stream=True`` response's body is its events, read through ``parse()``: here it raises
        `ResponseConsumedError` (never an empty body); ``with_streaming_response`` gives the raw bytes."""
        if self._content is None:
            raise ResponseConsumedError(
                "with_raw_response hands a stream=True response over as its stream: its events come from parse(). "
                "For the raw server-sent events use with_streaming_response and read() or iter_lines().")
        return self._content

    @property
    def text(self) -> str:
        """The body as text (the ``Content-Type`` charset, else UTF-8), as ``parse(to=str)``."""
        return text_decoder(self.headers).decode(self.content, final=True)

    def json(self) -> object:
        """The body decoded as JSON (nesting deeper than 200 levels is a ``ValueError``)."""
        return load_json(self.content)

    def read(self) -> bytes:
        """The body (already read for a non-stream call)."""
        return self.content

    @overload
    def parse(self) -> R: ...

    @overload
    def parse(self, *, to: type[_T]) -> _T: ...

    def parse(self, *, to: Any = None) -> object:
        """The typed result (parsed once; a stream for ``stream=True``). Raises `APIResponseValidationError`
        when the body is not what the endpoint returns.

        ``to``: parse the body as another type instead, as openai-python does: ``str``, ``bytes``, ``int``,
        ``float``, ``bool``, ``object``/``dict``/``list`` (the JSON), ``dict[...]``/``list[...]``/``Union[...]``
        or a pydantic ``BaseModel`` subclass (validated: `APIResponseValidationError` when the body does not fit),
        ``httpx.Response``; for ``stream=True`` only the stream's class. Any other type: `InvalidRequestError`."""
        if to is not None:
            if self._content is None:
                return self._stream_as(to)
            return self._as(to, self._content)
        if self._value is _UNSET:
            self._value = self._call.parse_body(self)  # it has what a response has: status, headers, content
        value: R = self._value
        return value

    def close(self) -> None:
        """Release a stream's connection (nothing to do for a read body)."""
        close = getattr(self._value, "close", None)
        if self._value is not _UNSET and close is not None:
            close()

    async def aclose(self) -> None:
        """``close()`` for an async stream."""
        close = getattr(self._value, "close", None)
        if self._value is not _UNSET and close is not None:
            await close()


def _is_httpx2_response(cast_to: object) -> bool:
    from holysheep._core.httpx2_types import httpx2_class

    return cast_to is not None and cast_to is httpx2_class("Response")


def wants_response(cast_to: object) -> bool:
    """True when ``cast_to`` asks for the HTTP response itself: ``httpx.Response`` or ``httpx2.Response``."""
    return cast_to is httpx.Response or _is_httpx2_response(cast_to)


def response_as(raw: BaseAPIResponse[object], cast_to: object) -> Any:
    """``raw``'s response as the ``cast_to`` that `wants_response` accepted (its body read)."""
    response = raw.http_response
    if not _is_httpx2_response(cast_to):
        return response
    import httpx2

    request = response.request
    request2 = httpx2.Request(request.method, str(request.url), headers=request.headers.multi_items())
    return decoded_response(httpx2.Response, response.status_code, headers=response.headers.multi_items(),
                            content=response.content, request=request2)  # decoded already

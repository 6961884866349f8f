"""The holysheep error tree.

Every failure the SDK reports is one of these classes; nothing is printed or turned into ``None``.

    HolySheepError
    ├── InvalidAPIKeyError          key missing or malformed (raised at construction, before any I/O)
    ├── InvalidRequestError         bad argument, raised before any I/O (also a ValueError)
    │   ├── UnknownModelError       a model name the estimator catalog does not know
    │   ├── UnknownGPUError         a GPU name the hardware table does not know
    │   ├── InsecureTransportError  a key (api_key= or a header, also per call) would travel over plain http
    │   │                           to a non-loopback host
    │   ├── CacheFileError      the ``cache=`` file is not a response cache (not SQLite, or another format)
    │   └── ResponsesBridgeError  a Responses API feature that cannot go over chat completions (stored state,
    │                           built-in tools) on a server without ``/responses``
    ├── QuotaExceededError          the batch cannot (or can no longer) run within the account quota
    ├── ClientClosedError           a call on a client that was closed (also a RuntimeError)
    ├── ResponseConsumedError       a with_streaming_response body read again after it was iterated or closed
    └── APIError                    the API (or the way to it) failed
        ├── APIStatusError          HTTP status >= 400 (one subclass per status family)
        │   └── NotFoundError       HTTP 404
        │       └── QuotaUnavailableError  the server has no ``/quota`` endpoint
        ├── APIResponseValidationError  a 2xx body that is not the expected JSON
        ├── APIStreamError          an ``error`` object arrived inside an SSE stream
        ├── ResponseTooLargeError   a body, SSE line or event went past its size limit (never retried)
        ├── RedirectRefusedError    a redirect the SDK will not follow (cross-origin POST, https -> http, a loop)
        └── APIConnectionError      no usable response (DNS, refused, reset, TLS)
            ├── APITLSError         TLS handshake failed (untrusted certificate, or a TLS alert); never retried
            ├── APITimeoutError     connect/read/idle timeout
            ├── StreamInterruptedError  the transport failed mid-stream; carries the partial text
            ├── StreamIdleTimeoutError  no progress for ``stream_idle_timeout`` seconds (both of the above)
            └── StreamTooLargeError  a stream's kept text went past ``max_stream_text_bytes`` (also a
                                     ResponseTooLargeError; never retried)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holysheep._egress import scrub_escaped, scrub_json

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    import httpx

__all__ = [
    "APIConnectionError",
    "APITLSError",
    "APIError",
    "APIStatusError",
    "APIResponseValidationError",
    "APIStreamError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "CacheFileError",
    "ClientClosedError",
    "ConflictError",
    "HolySheepError",
    "InsecureTransportError",
    "InternalServerError",
    "InvalidAPIKeyError",
    "InvalidRequestError",
    "NotFoundError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "QuotaUnavailableError",
    "RateLimitError",
    "RedirectRefusedError",
    "ResponseConsumedError",
    "ResponsesBridgeError",
    "ResponseTooLargeError",
    "SpendCapError",
    "StreamIdleTimeoutError",
    "StreamInterruptedError",
    "StreamTooLargeError",
    "UnknownGPUError",
    "UnknownModelError",
    "UnprocessableEntityError",
]


def _scrubbed(value: object) -> object:
    if isinstance(value, str):
        return scrub_escaped(value)  # also a key spelled with JSON escapes in a body kept as text
    if isinstance(value, tuple):
        return tuple(scrub_json(list(value)))
    if isinstance(value, dict | list):
        return scrub_json(value)
    return value


class HolySheepError(Exception):
    """Base class of every error raised by holysheep.

    Its message and every attribute set on it (``message``, ``body``, ``type``, ``code``, ``partial_text``,
    ... and any a subclass adds) pass the egress scrubber as they are set: no key a server echoed survives
    into ``str(e)``, ``repr(e)`` or an attribute."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(_scrubbed(a) for a in args))

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, _scrubbed(value))


class InvalidAPIKeyError(HolySheepError, ValueError):
    """The API key is missing or does not have the expected shape (``hs_`` + 16 or more characters)."""


class InvalidRequestError(HolySheepError, ValueError):
    """An argument is invalid. Raised before any network I/O.

    ``field`` names the offending argument (for example ``"messages[2].role"``) and ``reason`` says
    what was wrong with it.
    """

    def __init__(self, message: str, *, field: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.reason = reason or message


class UnknownModelError(InvalidRequestError):
    """A model name that the estimator catalog does not know; the message suggests the nearest names."""


class UnknownGPUError(InvalidRequestError):
    """A GPU name that the hardware table does not know; the message suggests the nearest names."""


class InsecureTransportError(InvalidRequestError):
    """An API key (``api_key=``, or a key-carrying header in ``default_headers`` or a call's ``extra_headers``)
    would be sent over plain ``http://`` to a host that is not loopback. Raised before any request; an
    `InvalidRequestError`, so a batch item with such headers fails alone, with nothing sent."""


class ResponsesBridgeError(InvalidRequestError):
    """``responses.create`` went to chat completions (the server has no ``/responses``, or
    ``client.responses.bridge = "always"``) with a feature that cannot be bridged: stored state
    (``previous_response_id``, ``conversation``, ``prompt``, ``background``) or a built-in tool (``web_search``,
    ``file_search``, ...). ``field`` names it. Nothing was sent for this call."""


class CacheFileError(InvalidRequestError):
    """The file given as ``cache=`` (or ``--cache``) is not a holysheep response cache: not a SQLite database,
    or one of another format. ``path`` names it. Raised when the cache is opened, before any request."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, field="cache")
        self.path = path


class QuotaExceededError(HolySheepError):
    """The account quota cannot cover (or no longer covers) the work asked for."""


class SpendCapError(QuotaExceededError):
    """A request did not fit the client's ``max_cost_usd`` (``Client(max_cost_usd=..., prices=...)``): what was
    spent, plus what requests in flight hold, plus this request's worst case would pass the cap. Raised before
    any I/O: nothing was sent. ``spent_usd``, ``reserved_usd`` (held by requests in flight), ``max_cost_usd`` and
    ``worst_case_usd`` (this request's most) say why; see ``docs/spend.md``."""

    def __init__(self, message: str, *, spent_usd: float, reserved_usd: float, max_cost_usd: float,
                 worst_case_usd: float) -> None:
        super().__init__(message)
        self.message = message
        self.spent_usd = spent_usd
        self.reserved_usd = reserved_usd
        self.max_cost_usd = max_cost_usd
        self.worst_case_usd = worst_case_usd


class ClientClosedError(HolySheepError, RuntimeError):
    """A call on a client whose connection pool was closed (``close()``, ``aclose()`` or the end of its
    ``with`` block). Never retried: a closed client stays closed. Make a new client, or close this one
    only once its calls (and batches) are done."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "This client was closed (close(), aclose() or the end of its `with` block), "
                                    "so it sends nothing more. Create a new client, or close this one only after "
                                    "its calls and batches have finished.")


class ResponseConsumedError(HolySheepError, RuntimeError):
    """The body of a ``with_streaming_response`` response was asked for again after it had been iterated
    (``iter_bytes``/``iter_text``/``iter_lines``) or the response closed. Such a body is not kept (its memory
    stays bounded); call ``read()`` or ``parse()`` first (then it is kept and iterating gives it again)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "This response's body was already iterated (iter_bytes/iter_text/iter_lines) or "
                                    "the response was closed, and it is not kept. Call read() or parse() before "
                                    "iterating, or use with_raw_response, which reads the body up front.")


class APIError(HolySheepError):
    """The API, or the way to it, failed.

    ``request`` is the ``httpx.Request`` that failed, when there was one; its headers mask the
    ``Authorization`` value. As in openai-python, ``body`` is the server's error object (the ``"error"`` member of
    an OpenAI-style body, else the whole decoded body, or its text when it is not JSON; the whole body of a status
    error stays in ``e.response.json()``), and ``type``, ``code`` and ``param`` are that object's fields.
    """

    message: str
    request: httpx.Request | None
    body: object | None
    type: str | None
    code: str | None
    param: str | None

    def __init__(
        self,
        message: str,
        *,
        request: httpx.Request | None = None,
        body: object | None = None,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request = request
        self.body = body
        self.type = type
        self.code = code
        self.param = param

    def __reduce__(self) -> str | tuple[object, ...]:
        # Pickle without the raw request/response: they can hold the Authorization header or a body in
        # which the server echoed the key. Everything else (message, body, status, ...) is kept.
        state = {k: v for k, v in self.__dict__.items() if k not in ("request", "response")}
        return (_rebuild_api_error, (type(self), self.message, state))


def _rebuild_api_error(cls: type[APIError], message: str, state: dict[str, object]) -> APIError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    err.request = None
    if isinstance(err, APIStatusError):
        err.response = None
    return err


class ResponseTooLargeError(APIError):
    """A response body (after decompression), an SSE line or an SSE event went past its size limit.

    The connection is closed at once and the call is not retried: the same server would send the same
    body again. ``limit`` is the limit in bytes; raise ``max_response_bytes`` or ``max_sse_event_bytes``
    on the client if the server is trusted and really sends that much.
    """

    def __init__(self, message: str, *, limit: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.limit = limit


class RedirectRefusedError(APIError):
    """The server redirected a call somewhere the SDK will not follow: a non-GET request (which carries the
    prompt and the idempotency key) to another origin, or any request from https down to plain http on a
    host that is not loopback, or a redirect loop (more than 20 redirects on httpx, 10 on aiohttp). Not retried.
    Point ``base_url`` at the final URL instead."""


class APIStreamError(APIError):
    """The server sent an ``error`` object inside an SSE stream (after an HTTP 200).

    ``message``, ``type`` and ``code`` are the server's; ``partial_text`` is what had streamed before.
    """

    def __init__(self, message: str, *, partial_text: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.partial_text = partial_text


class APIResponseValidationError(APIError):
    """The server answered 2xx but the body is not the JSON this endpoint returns."""

    def __init__(self, message: str, *, status_code: int, request_id: str | None = None, partial_text: str = "",
                 **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.status_code = status_code
        self.request_id = request_id
        self.partial_text = partial_text


class APIStatusError(APIError):
    """The server answered with an HTTP error status (>= 400)."""

    status_code: int
    request_id: str | None
    response: httpx.Response | None

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        request_id: str | None = None,
        response: httpx.Response | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.status_code = status_code
        self.request_id = request_id
        self.response = response
        self.retry_after: float | None = None
        self.retries_taken = 0


class BadRequestError(APIStatusError):
    """HTTP 400: the request was malformed. Never retried."""


class AuthenticationError(APIStatusError):
    """HTTP 401: the key was rejected. Never retried."""


class PermissionDeniedError(APIStatusError):
    """HTTP 403: the key may not use this resource. Never retried."""


class NotFoundError(APIStatusError):
    """HTTP 404: unknown path or model. Never retried."""


class QuotaUnavailableError(NotFoundError):
    """HTTP 404 on ``GET /quota``: this server has no quota endpoint (most self-hosted servers have none)."""


class ConflictError(APIStatusError):
    """HTTP 409: a conflicting request (often a lock timeout). Retried."""


class UnprocessableEntityError(APIStatusError):
    """HTTP 422: the request was well-formed but invalid. Never retried."""


class RateLimitError(APIStatusError):
    """HTTP 429: rate limited (or, with ``type == "insufficient_quota"``, quota exhausted)."""


class InternalServerError(APIStatusError):
    """HTTP >= 500: the server failed. Retried."""


class APIConnectionError(APIError):
    """No usable response arrived: refused, reset, DNS or TLS failure."""

    def __init__(self, message: str = "Connection error.", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)


class APITLSError(APIConnectionError):
    """The TLS handshake failed, the same on every transport: the server's certificate is not trusted by the CA
    store in use (the message names it and how to point the SDK at another), or the server refused the
    handshake with a TLS alert (often: it requires a client certificate, ``cert=``). Never retried."""


class APITimeoutError(APIConnectionError):
    """The request timed out (connect, read, or the stream idle timeout)."""

    def __init__(self, message: str = "Request timed out.", **kwargs: object) -> None:
        super().__init__(message, **kwargs)


class StreamInterruptedError(APIConnectionError):
    """The transport failed after a stream had started. ``partial_text`` holds what arrived so far."""

    def __init__(self, message: str, *, partial_text: str = "", **kwargs: object) -> None:
        super().__init__(message, **kwargs)
        self.partial_text = partial_text


class StreamIdleTimeoutError(APITimeoutError, StreamInterruptedError):
    """No event arrived for ``stream_idle_timeout`` seconds; ``partial_text`` holds what arrived."""

    def __init__(self, message: str, *, partial_text: str = "", **kwargs: Any) -> None:
        APIError.__init__(self, message, **kwargs)
        self.partial_text = partial_text


class StreamTooLargeError(StreamInterruptedError, ResponseTooLargeError):
    """A stream's kept text (content, reasoning, refusals, tool calls) went past ``max_stream_text_bytes``.

    The connection is closed and the call is not retried. ``partial_text`` holds choice 0's content up to the
    cap (joined when first read, so that the error does not hold a second copy of it); ``limit`` is the cap in
    bytes.
    """

    def __init__(self, message: str, *, partial_text: str | Callable[[], str] = "", limit: int | None = None,
                 **kwargs: Any) -> None:
        APIError.__init__(self, message, **kwargs)
        self._partial = partial_text
        self.limit = limit

    @property
    def partial_text(self) -> str:
        if not isinstance(self._partial, str):
            self._partial = self._partial()
        return self._partial

    @partial_text.setter
    def partial_text(self, value: str) -> None:
        self._partial = value

"""The life of one API call as a sans-I/O state machine shared by the sync and async clients.

The shells loop: ``call.begin_attempt()`` → (within ``call.ctx.sending()`` when hooks wrap the send)
``request = call.next_request(http)`` → send → ``call.on_response`` or ``call.on_transport_error`` → an
``Outcome`` says return, raise, or sleep and retry.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from holysheep._core.answer import NoAnswerError
from holysheep._core.config import ClientConfig, check_key_transport, normalize_timeout
from holysheep._core.error_mapping import error_from_status, error_from_transport, redirect_loop_error
from holysheep._core.json_check import JSONTooDenseError, density_problem
from holysheep._core.keys import redact
from holysheep._core.log import logger, retry_logger
from holysheep._core.option_checks import check_idle_timeout, check_max_retries
from holysheep._core.request import NO_OPTIONS, RequestOptions, RequestSpec
from holysheep._core.response_limits import attempt_seconds
from holysheep._core.retry import RetryPolicy, backoff_delay, is_retryable, server_delay
from holysheep._core.scrub import request_id_of, scrub_cause
from holysheep._core.validation import body_error
from holysheep._egress import remember_headers, scrub_body
from holysheep._exceptions import APIError, APIResponseValidationError
from holysheep.types.chat import _ResponseMeta

if TYPE_CHECKING:
    from holysheep._core.hooks import CallContext

__all__ = ["Call", "Outcome", "RawResponse", "new_idempotency_key"]

_POLICIES: dict[tuple[Any, ...], RetryPolicy] = {}
RETRY_COUNT_HEADER = "x-holysheep-retry-count"
IDEMPOTENCY_HEADER = "idempotency-key"
_OWN_HEADERS = frozenset({"authorization", "content-type", "content-length", "host", IDEMPOTENCY_HEADER,
                          RETRY_COUNT_HEADER})  # what hooks may not set


def _reseed_idempotency_keys() -> None:
    """A new random prefix (64 bits) and a fresh counter: at import, and in a forked child."""
    global _key_prefix, _key_counter
    _key_prefix = f"hs-{os.urandom(8).hex()}-"
    _key_counter = itertools.count(1)


_key_prefix = ""
_key_counter = itertools.count(1)
_reseed_idempotency_keys()
if hasattr(os, "register_at_fork"):  # a forked child must not repeat its parent's keys
    os.register_at_fork(after_in_child=_reseed_idempotency_keys)


def new_idempotency_key() -> str:
    """A key no other request of any process shares: this process's random prefix and a counter.

    One ``os.urandom`` per process rather than per request (a system call each)."""
    return f"{_key_prefix}{next(_key_counter):x}"


class RawResponse:
    """A successful, fully read response from a backend that need not build an ``httpx.Response``."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content


@dataclass(slots=True)
class Outcome:
    """What the shell does next: return ``value``, or raise ``error``, or sleep ``delay`` and retry."""

    value: Any = None
    error: APIError | None = None
    retry: bool = False
    delay: float = 0.0
    cause: BaseException | None = None


def _settings(config: ClientConfig, opts: RequestOptions, stream: bool
              ) -> tuple[RetryPolicy, httpx.Timeout, float | None, float | None]:
    """A call's retry policy, timeout, whole-attempt deadline and stream idle limit (checked here)."""
    max_retries = config.max_retries if opts.max_retries is None else opts.max_retries
    key = (max_retries, config.initial_retry_delay, config.max_retry_delay, config.max_retry_after)
    policy = _POLICIES.get(key) if type(max_retries) is int else None  # 2.0 and True are checked, not cached
    if policy is None:  # a frozen value: one per distinct setting, not one per call
        check_max_retries(max_retries)
        policy = RetryPolicy(*key)
        if len(_POLICIES) >= 64:
            _POLICIES.clear()
        _POLICIES[key] = policy
    timeout = normalize_timeout(opts.timeout) if opts.has_timeout else config.timeout
    deadline_s = attempt_seconds(timeout)  # the whole attempt (non-stream; stream: to headers)
    idle = opts.stream_idle_timeout if opts.has_idle_timeout else config.stream_idle_timeout
    check_idle_timeout(idle)
    idle_timeout = float(idle) if idle is not None and stream else None
    if idle_timeout is not None:
        t = timeout  # a byte read waits at most the idle limit, and never longer than the caller's read timeout
        read = idle_timeout if t.read is None else min(t.read, idle_timeout)
        timeout = httpx.Timeout(connect=t.connect, read=read, write=t.write, pool=t.pool)
    return policy, timeout, deadline_s, idle_timeout


class Call:
    """State of one logical call across its attempts (retry count, idempotency key, timing).

    It is the only writer of the attempt headers (``x-holysheep-retry-count`` from ``retries_taken``,
    and one ``idempotency-key`` for every attempt, generated unless given) and the only place that
    decides whether a failed attempt is retried (through ``is_retryable``), how long to wait, and
    calls the ``on_retry`` hook. ``served_by`` names the endpoint (``"primary"`` or a fallback);
    ``rand`` is the jitter source (injectable for tests); times come from ``config.clock``.
    """

    __slots__ = ("__weakref__", "_content", "_headers", "_rand", "_url", "_url_str", "config", "ctx", "deadline_s",
                 "free_retries", "idle_timeout", "lazy_body", "policy", "rate_limits_free", "response_headers",
                 "retries_taken", "served_by", "spec", "started_at", "status_code", "timeout")

    def __init__(self, config: ClientConfig, spec: RequestSpec, *, served_by: str = "primary",
                 idempotency_key: str | None = None, rand: Callable[[], float] = random.random,
                 ctx: CallContext | None = None) -> None:
        self.config = config
        self.ctx = ctx  # the call's hook context (None without hooks: then nothing is reported)
        self.status_code: int | None = None
        self.spec = spec
        self._rand = rand
        opts = spec.options
        settings: tuple[RetryPolicy, httpx.Timeout, float | None, float | None]
        if opts is not NO_OPTIONS:
            settings = _settings(config, opts, spec.stream)
        elif spec.stream in config.call_settings:  # the usual case: the client's settings, worked out once
            settings = config.call_settings[spec.stream]
        else:
            settings = config.call_settings[spec.stream] = _settings(config, opts, spec.stream)
        self.policy, self.timeout, self.deadline_s, self.idle_timeout = settings
        self.lazy_body = spec.stream or spec.raw == "stream"
        """True when a 2xx body is handed over unread (a stream, or ``with_streaming_response``): the backend
        returns it as a byte stream. Error bodies are always read in full, so a status is decided here first."""
        self.served_by = served_by
        self.response_headers: Mapping[str, str] | None = None  # the last response's (rate-limit headers)
        self.retries_taken = 0
        self.rate_limits_free = False
        """True (the batch sets it): a 429 is retried without counting against ``max_retries``."""
        self.free_retries = 0
        """Retries that did not count against ``max_retries`` (429s when ``rate_limits_free``)."""
        cached = config.urls.get(spec.path)
        if cached is None:
            url = config.base_url.join(spec.path)
            if config.base_url.query and not url.query:  # joining drops the base URL's query: keep it
                url = url.copy_with(query=config.base_url.query)
            if config.default_query:
                url = url.copy_merge_params(dict(config.default_query))
            cached = config.urls[spec.path] = (url, str(url))
        self._url, self._url_str = cached
        if opts.extra_query:
            self._url = self._url.copy_merge_params(dict(opts.extra_query))
            self._url_str = str(self._url)
        try:
            self._content = to_json(spec.body) if spec.body is not None else None
        except (PydanticSerializationError, ValueError, TypeError) as exc:
            raise body_error(spec.body or {}, exc) from None
        headers = config.base_headers.copy()
        if spec.method != "GET":
            headers[IDEMPOTENCY_HEADER] = idempotency_key or new_idempotency_key()
        else:
            del headers["content-type"]
        if opts.extra_headers:
            check_key_transport(config.base_url, config.allow_insecure_http, None, opts.extra_headers,
                                field="extra_headers")
            remember_headers(opts.extra_headers, self)  # masked in every output while this call lives (_egress)
            for name, value in opts.extra_headers.items():
                if value is None:
                    headers.pop(name.lower(), None)
                else:
                    headers[name.lower()] = value
        self._headers = headers
        self.started_at = 0.0

    @property
    def api_key(self) -> str | None:
        return self.config.api_key.reveal()

    def begin_attempt(self) -> None:
        """Stamp the next attempt: retry-count header (same idempotency key) and the start time."""
        self._headers[RETRY_COUNT_HEADER] = str(self.retries_taken)
        self.status_code = None
        if self.ctx is not None:
            url = self._url
            self.ctx.request_sent(self.retries_taken, self.served_by, self._url_str, url.host,
                                  url.port or (443 if url.scheme == "https" else 80), self.set_hook_header)
        self.started_at = self.config.clock()
        if logger.isEnabledFor(10):
            logger.debug("%s %s attempt=%d", self.spec.method, self._url, self.retries_taken + 1)

    def set_hook_header(self, name: str, value: str) -> None:
        """A hook's header (`RequestEvent.set_header`): sent from now on; the SDK's own headers are refused."""
        key = name.lower()
        if key in _OWN_HEADERS:
            raise ValueError(f"a hook cannot set the {name!r} header: the SDK writes it")
        self._headers[key] = value

    def next_request(self, http: httpx.Client | httpx.AsyncClient | None) -> httpx.Request:
        """The attempt begun last (`begin_attempt`) as an httpx request.

        With ``http`` the request is built by that client (its default headers, cookies); with None it
        is built directly.
        """
        if http is None:
            return self.httpx_request()
        return http.build_request(self.spec.method, self._url, content=self._content, headers=self._headers,
                                  timeout=self.timeout)

    def httpx_request(self) -> httpx.Request:
        """The current attempt as an ``httpx.Request`` (the aiohttp backend builds it only for errors)."""
        return httpx.Request(self.spec.method, self._url, content=self._content, headers=self._headers,
                             extensions={"timeout": self.timeout.as_dict()})

    @property
    def method(self) -> str:
        return self.spec.method

    @property
    def url(self) -> str:
        return self._url_str

    @property
    def headers(self) -> dict[str, str]:
        return self._headers

    @property
    def content(self) -> bytes | None:
        return self._content

    @property
    def elapsed(self) -> float:
        return self.config.clock() - self.started_at

    def decide(self, error: APIError, server_delay: float | None = None) -> Outcome:
        """The retry decision for a failed attempt: retry (after ``delay``) or fail with ``error``.

        Retried when ``is_retryable(error)``, retries are left, and the server's delay (if any) is at
        most ``max_retry_after``. A server delay of 0 (``Retry-After: 0``, ``0.0`` or a date in the past) waits
        the backoff's step instead, so a server that answers every retry so cannot get one per round trip.
        A retry counts itself and calls the ``on_retry`` hook. With
        ``rate_limits_free`` (a batch) a 429 is retried whatever the count and does not use a retry up.
        """
        free = self.rate_limits_free and getattr(error, "status_code", None) == 429
        counted = self.retries_taken - self.free_retries
        if not is_retryable(error) or (not free and counted >= self.policy.max_retries):
            return Outcome(error=error)
        if server_delay is not None and server_delay > self.policy.max_retry_after:
            return Outcome(error=error)  # the server wants a long pause: let the caller decide
        if server_delay is not None and server_delay <= 0:
            server_delay = None  # "Retry-After: 0" (or a past date) asks for nothing: the backoff's own step
        delay = server_delay if server_delay is not None else backoff_delay(
            self.policy, self.retries_taken if free else counted, self._rand)
        self.retries_taken += 1
        if free:
            self.free_retries += 1
        if retry_logger.isEnabledFor(20):  # openai-python's words, on holysheep._base_client
            retry_logger.info("Retrying request in %f seconds (retry %i of %s)", delay, self.retries_taken,
                              self.policy.max_retries)
        if logger.isEnabledFor(10):
            logger.debug("retrying %s %s in %.3fs (retry %d of %d): %s", self.spec.method, self.spec.path,
                         delay, self.retries_taken, self.policy.max_retries, error.message)
        hook = self.config.on_retry
        if hook is not None:
            hook(self.retries_taken, error, delay)
        return Outcome(error=error, retry=True, delay=delay)

    def on_response(self, response: httpx.Response | RawResponse) -> Outcome:
        """Decide on a response. Its body must already be read, unless it is a 2xx one and ``lazy_body``
        (then the response goes to the caller unread: a stream, or ``with_streaming_response``)."""
        status = self.status_code = response.status_code
        self.response_headers = response.headers
        if status < 400:
            if self.lazy_body:
                return Outcome(value=response)
            try:
                return Outcome(value=self._parse(response))
            except APIResponseValidationError as exc:
                return self.decide(exc)
        retry_after = server_delay(status, response.headers)
        assert isinstance(response, httpx.Response)  # backends hand error responses over as httpx.Response
        wire = self.spec.wire  # a format's own error body (None: chat, embeddings: OpenAI's {"error": {...}})
        err = error_from_status(response, api_key=self.api_key, retries_taken=self.retries_taken,
                                retry_after=retry_after,
                                error_fields=getattr(wire, "error_fields", None) if wire is not None else None)
        if logger.isEnabledFor(10):  # DEBUG: at INFO the log says what openai-python's does (each retry)
            logger.debug("%s %s -> HTTP %d (request_id=%s)", self.spec.method, self.spec.path, status,
                         err.request_id)
        return self.decide(err, retry_after)

    def on_transport_error(self, exc: Exception, request: httpx.Request | None) -> Outcome:
        """Decide on a transport failure (timeout, refused, reset): retryable, except a redirect loop."""
        loop = redirect_loop_error(exc, request, api_key=self.api_key)
        if loop is not None:
            return self.decide(loop)  # not retryable: the next attempt meets the same loop
        err = error_from_transport(exc, request, api_key=self.api_key, retries_taken=self.retries_taken,
                                   ca_source=self.config.network.ca_source)
        outcome = self.decide(err)
        outcome.cause = scrub_cause(exc, self.api_key)  # a masked copy: never the raw request or key
        return outcome

    def on_empty_stream(self, error: APIError) -> Outcome:
        """Decide on a 2xx stream that ended before its first event: nothing arrived, so retry it like a
        connection error (and, after the retries, let the router fall back)."""
        return self.decide(error)

    def body_error(self, exc: Exception) -> tuple[APIError, BaseException | None]:
        """The typed error, and a key-free cause to chain, for a transport failure (timeout, reset, bad
        encoding) while the caller reads a body handed over unread (``with_streaming_response``). Mapped like
        any transport failure, and never retried: the response was already the caller's."""
        try:
            request: httpx.Request | None = getattr(exc, "request", None)
        except RuntimeError:  # an httpx error raised without a request (a deadline): give it the call's
            request = self.httpx_request()
            if isinstance(exc, httpx.RequestError):
                exc.request = request  # masked by scrub_cause below
        err = error_from_transport(exc, request or self.httpx_request(), api_key=self.api_key,
                                   retries_taken=self.retries_taken, ca_source=self.config.network.ca_source)
        return err, scrub_cause(exc, self.api_key)

    def _parse(self, response: httpx.Response | RawResponse) -> object:
        if self.spec.raw == "raw":
            from holysheep._core.raw_response import APIResponse

            return APIResponse(response.status_code, response.headers, response.content, call=self)
        return self.parse_body(response)

    def parse_body(self, response: Any) -> object:
        """The parsed reply (with its transport facts), or `APIResponseValidationError`. ``response``: anything
        with ``status_code``, ``headers`` and ``content`` (a response, or an `APIResponse`)."""
        failure: str | None = None
        try:
            if (dense := density_problem(response.content)) is not None:  # before decoding or validating it
                raise JSONTooDenseError(dense)
            result = self.spec.parse(scrub_body(response.content))  # a key the server echoed is masked
        except NoAnswerError as exc:
            how = ("it is retried like a transient failure" if not self.spec.raw else
                   "it was not retried: with_raw_response/with_streaming_response hand the response over as it is")
            failure = (f"HTTP {response.status_code} from {self.spec.method} {self.spec.path} carries no answer "
                       f"({redact(str(exc), self.api_key)}); {how}.")
        except (ValidationError, ValueError) as exc:
            why = f": {exc}" if isinstance(exc, JSONTooDenseError) else ""
            failure = (f"HTTP {response.status_code} from {self.spec.method} {self.spec.path} is not the expected "
                       f"JSON ({type(exc).__name__}{why}). Check that base_url points at an OpenAI-compatible API.")
        if failure is not None:  # raised outside the handler: pydantic's error (with the raw body) is not chained
            raise APIResponseValidationError(
                failure,
                status_code=response.status_code, request_id=request_id_of(response.headers, self.api_key),
                body=redact(response.content[:2000].decode("utf-8", "replace"), self.api_key),
            )
        if isinstance(result, _ResponseMeta):
            result._set_transport((request_id_of(response.headers, self.api_key), self.retries_taken, self.elapsed,
                                   self.served_by))
        return result

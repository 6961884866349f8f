"""Self-hosted fallbacks and the primary's circuit breaker (pure logic, shared by sync and async).

A call goes to the primary unless its circuit is open. It moves to the next endpoint only when the
previous one failed with a retryable error (connection, timeout, 408/409/429/5xx) after its own
retries; 400/401/403/404/422 are the caller's problems and are raised as they are. A stream falls
back only before its first event: the shells read up to that event before returning the stream, so a
200 that closes with nothing in it is retried and then falls back like a connection error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from holysheep._core.config import ClientConfig, make_config
from holysheep._core.log import logger
from holysheep._core.request import RequestSpec
from holysheep._core.retry import is_retryable
from holysheep._exceptions import APIError, InvalidRequestError

__all__ = ["CircuitBreaker", "Endpoint", "Fallback", "Router"]


@dataclass(frozen=True)
class Fallback:
    """An OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, ...) to use when the primary is down.

    ``models`` maps the primary's model names to this server's (unmapped names pass through).
    ``api_key`` is that server's own key, or None. ``name`` defaults to the host.
    """

    base_url: str
    api_key: str | None = None
    models: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    allow_insecure_http: bool = False

    def __repr__(self) -> str:  # never show the key
        return f"Fallback(name={self.name!r}, base_url={self.base_url!r}, models={dict(self.models)!r})"


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive retryable failures; after ``cooldown_s`` it lets
    one probe through (half-open); a success closes it, a failure opens it again."""

    def __init__(self, failure_threshold: int = 5, cooldown_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int) or failure_threshold < 1:
            raise InvalidRequestError(f"failure_threshold must be an integer >= 1, got {failure_threshold!r}.",
                                      field="failure_threshold")
        if (isinstance(cooldown_s, bool) or not isinstance(cooldown_s, (int, float)) or not cooldown_s >= 0
                or cooldown_s == float("inf")):
            raise InvalidRequestError(f"cooldown_s must be a number of seconds >= 0, got {cooldown_s!r}.",
                                      field="cooldown_s")
        if not callable(clock):
            raise InvalidRequestError(f"clock must be a callable returning seconds, got {type(clock).__name__}.",
                                      field="clock")
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self.times_opened = 0

    @property
    def state(self) -> str:
        """``"closed"``, ``"open"`` or ``"half_open"``."""
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """May a request go to the primary now? (In half-open state only one probe at a time.)"""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return True
            if state == "half_open" and not self._probing:
                self._probing = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probing = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            was_probe = self._probing
            self._probing = False
            if was_probe or (self._opened_at is None and self._failures >= self.failure_threshold):
                self._opened_at = self._clock()
                self.times_opened += 1


@dataclass
class Endpoint:
    """Where a call can go: the primary or one fallback, with its own config and counters."""

    name: str
    config: ClientConfig
    models: Mapping[str, str] = field(default_factory=dict)
    requests: int = 0
    successes: int = 0
    failures: int = 0

    def prepare(self, spec: RequestSpec) -> RequestSpec:
        model = spec.model
        if model is None or model not in self.models or spec.body is None:
            return spec
        return replace(spec, body={**spec.body, "model": self.models[model]})


def may_fall_back(err: APIError) -> bool:
    """Retryable failures (the one ``is_retryable`` rule) move on to the next endpoint; the caller's own
    errors, and exhausted quota, never do."""
    return is_retryable(err)


class Router:
    """Orders endpoints for each call and keeps the breaker and the counters."""

    def __init__(self, primary: ClientConfig, fallbacks: list[Fallback], breaker: CircuitBreaker | None) -> None:
        self.breaker = breaker or CircuitBreaker()
        self.primary = Endpoint("primary", primary)
        self.fallbacks = [self._endpoint(primary, fb, i) for i, fb in enumerate(fallbacks)]
        self._lock = threading.Lock()

    @staticmethod
    def _endpoint(primary: ClientConfig, fb: Fallback, index: int) -> Endpoint:
        if not isinstance(fb, Fallback):
            raise InvalidRequestError(f"fallbacks[{index}] must be a holysheep.Fallback, got {type(fb).__name__}.",
                                      field=f"fallbacks[{index}]")
        config = make_config(
            api_key=fb.api_key or "", base_url=fb.base_url, timeout=primary.timeout, max_retries=primary.max_retries,
            initial_retry_delay=primary.initial_retry_delay, max_retry_delay=primary.max_retry_delay,
            max_retry_after=primary.max_retry_after, stream_idle_timeout=primary.stream_idle_timeout,
            default_headers=None, allow_insecure_http=fb.allow_insecure_http, on_retry=primary.on_retry,
            max_response_bytes=primary.max_response_bytes, max_sse_event_bytes=primary.max_sse_event_bytes,
            max_stream_text_bytes=primary.max_stream_text_bytes,  # the primary's bounds hold on every endpoint
            clock=primary.clock,  # one clock for the whole call, whichever endpoint serves it
        )
        if not isinstance(fb.models, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in fb.models.items()):
            raise InvalidRequestError(f"fallbacks[{index}].models must map model names to model names (str to str), "
                                      f"got {type(fb.models).__name__}.", field=f"fallbacks[{index}].models")
        name = fb.name or urlsplit(fb.base_url).netloc or f"fallback-{index}"
        return Endpoint(name, config, dict(fb.models))

    def endpoints(self) -> list[Endpoint]:
        """Endpoints to try for one call, in order (the primary is skipped while its circuit is open)."""
        if self.breaker.allow():
            return [self.primary, *self.fallbacks]
        return list(self.fallbacks) or [self.primary]

    def succeeded(self, endpoint: Endpoint) -> None:
        with self._lock:
            endpoint.requests += 1
            endpoint.successes += 1
        if endpoint is self.primary:
            self.breaker.record_success()
        elif logger.isEnabledFor(20):
            logger.info("served by fallback %s", endpoint.name)

    def failed(self, endpoint: Endpoint, err: APIError, is_last: bool) -> bool:
        """Record a failure; True when the call should move on to the next endpoint."""
        with self._lock:
            endpoint.requests += 1
            endpoint.failures += 1
        eligible = may_fall_back(err)
        if endpoint is self.primary and eligible:
            self.breaker.record_failure()
        if eligible and not is_last:
            logger.warning("%s failed (%s); falling back", endpoint.name, type(err).__name__)
            return True
        return False

    def stats(self) -> dict[str, Any]:
        """Counters per endpoint and the breaker's state."""
        with self._lock:
            rows = {e.name: {"requests": e.requests, "successes": e.successes, "failures": e.failures}
                    for e in (self.primary, *self.fallbacks)}
        return {"circuit": self.breaker.state, "circuit_opened": self.breaker.times_opened, "endpoints": rows,
                "fallback_served": sum(e.successes for e in self.fallbacks)}

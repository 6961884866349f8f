"""Fault descriptions and the plan that decides which request gets which fault."""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

from ._replies import Response, StreamReply, dumps, error_body, error_response

__all__ = [
    "DEFAULT_FAULT_MIX",
    "Fault",
    "FaultPlan",
    "FaultSpec",
    "FaultsArg",
    "apply_fault",
    "fault_response",
    "normalize_path",
]

_KINDS = frozenset(
    {
        "status",
        "reset",
        "stall",
        "malformed_json",
        "stream_cut",
        "stream_error",
        "unauthorized",
        "quota_exhausted",
    }
)


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build it with the class methods, e.g. ``Fault.status(429, retry_after=0.01)``.

    ``kind`` is one of ``status``, ``reset``, ``stall``, ``malformed_json``, ``stream_cut``,
    ``stream_error``, ``unauthorized``, ``quota_exhausted``.
    """

    kind: str
    status_code: int | None = None
    retry_after: float | None = None
    seconds: float | None = None
    after_events: int = 2
    message: str | None = None
    error_type: str | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(_KINDS)}")

    @classmethod
    def status(
        cls, status_code: int, *, retry_after: float | None = None, message: str | None = None
    ) -> Fault:
        """An error response with this status (4xx/5xx) and an OpenAI error body.

        ``retry_after`` (seconds) adds a ``Retry-After`` header; 429 gets type ``rate_limit_exceeded``,
        5xx ``server_error``.
        """
        if not 400 <= status_code <= 599:
            raise ValueError(f"status_code must be 4xx or 5xx, got {status_code}")
        return cls("status", status_code=status_code, retry_after=retry_after, message=message)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0) -> Fault:
        """429 with ``Retry-After``."""
        return cls.status(429, retry_after=retry_after)

    @classmethod
    def reset(cls) -> Fault:
        """Close the connection without a response (a TCP RST, via ``SO_LINGER`` 0)."""
        return cls("reset")

    @classmethod
    def stall(cls, seconds: float | None = None) -> Fault:
        """Read the request, then answer nothing: forever (until ``stop()``), or for ``seconds`` and then
        answer normally."""
        return cls("stall", seconds=seconds)

    @classmethod
    def malformed_json(cls) -> Fault:
        """Status 200 with a truncated JSON body (for a stream: a truncated first chunk, then ``[DONE]``)."""
        return cls("malformed_json")

    @classmethod
    def stream_cut(cls, after_events: int = 2) -> Fault:
        """Send ``after_events`` SSE events, then close the connection without the end of the body.

        A JSON response is cut half-way through its ``Content-Length`` body instead.
        """
        return cls("stream_cut", after_events=after_events)

    @classmethod
    def stream_error(
        cls,
        message: str = "The server had an error while processing your request.",
        *,
        error_type: str = "server_error",
        code: str | None = None,
        after_events: int = 1,
    ) -> Fault:
        """Send ``after_events`` SSE events, then ``data: {"error": {...}}`` and end the body (no ``[DONE]``).

        A JSON request gets a 500 with that error instead.
        """
        return cls(
            "stream_error", after_events=after_events, message=message, error_type=error_type, code=code
        )

    @classmethod
    def unauthorized(cls) -> Fault:
        """401 ``invalid_api_key``, whatever key was sent."""
        return cls("unauthorized")

    @classmethod
    def quota_exhausted(cls) -> Fault:
        """429 with type and code ``insufficient_quota`` and no ``Retry-After``."""
        return cls("quota_exhausted")

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """A fault from a short name: ``"429"``, ``"503"``, ``"reset"``, ``"stall"``, ``"malformed_json"``,
        ``"stream_cut"``, ``"stream_error"``, ``"unauthorized"`` / ``"401"``, ``"quota_exhausted"``."""
        name = spec.strip().lower().replace("-", "_")
        if name in ("401", "unauthorized"):
            return cls.unauthorized()
        if name.isdigit():
            return cls.status(int(name), retry_after=0.05 if name == "429" else None)
        if name in _KINDS and name != "status":
            return cls(name)
        raise ValueError(f"unknown fault {spec!r}")

    @property
    def name(self) -> str:
        """A short label: ``"429"``, ``"500"``, ``"reset"``, ``"stream_cut"``…"""
        return str(self.status_code) if self.kind == "status" else self.kind


FaultSpec = Union[Fault, str]
FaultsArg = Union[Sequence[FaultSpec | None], Mapping[str, Sequence[FaultSpec | None]], None]

DEFAULT_FAULT_MIX: dict[Fault, float] = {
    Fault.status(429, retry_after=0.05): 3.0,
    Fault.status(500): 2.0,
    Fault.status(503): 2.0,
    Fault.reset(): 1.0,
    Fault.malformed_json(): 1.0,
    Fault.stream_cut(): 1.0,
}
"""The mix used by ``fault_rate`` when no ``fault_mix`` is given (weights, not probabilities)."""


def normalize_path(path: str) -> str:
    """``"/v1/chat/completions"`` and ``"chat/completions"`` both become ``"/chat/completions"``."""
    path = "/" + path.lstrip("/")
    return path[3:] if path.startswith("/v1/") else path


def _as_fault(spec: FaultSpec | None) -> Fault | None:
    return Fault.parse(spec) if isinstance(spec, str) else spec


class FaultPlan:
    """Decides the fault for each request. Thread-safe.

    A request first takes the next item of its path's own queue (from a ``{path: [...]}`` mapping), then
    of the shared queue (a plain list, for paths in ``paths``), then rolls ``rate`` against ``mix``.
    A ``None`` item in a queue means "no fault for this request".
    """

    def __init__(
        self,
        faults: FaultsArg = None,
        *,
        rate: float = 0.0,
        mix: Mapping[FaultSpec, float] | Iterable[FaultSpec] | None = None,
        seed: int | None = None,
        paths: Iterable[str] | None = ("/chat/completions",),
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault_rate must be within [0, 1], got {rate}")
        self._lock = threading.Lock()
        self._queues: dict[str | None, deque[Fault | None]] = {}
        if isinstance(faults, Mapping):
            for path, seq in faults.items():
                self._queues[normalize_path(path)] = deque(_as_fault(f) for f in seq)
        elif faults is not None:
            self._queues[None] = deque(_as_fault(f) for f in faults)
        self.rate = rate
        weights = mix if mix is not None else DEFAULT_FAULT_MIX
        if not isinstance(weights, Mapping):
            weights = dict.fromkeys(weights, 1.0)
        pairs = [(_as_fault(f), float(w)) for f, w in weights.items() if w > 0]
        self._choices: list[Fault] = [f for f, _ in pairs if f is not None]
        self._weights = [w for f, w in pairs if f is not None]
        if rate > 0 and not self._choices:
            raise ValueError("fault_rate > 0 needs at least one fault in fault_mix")
        self._rng = random.Random(seed)
        self.paths = None if paths is None else frozenset(normalize_path(p) for p in paths)

    def next(self, path: str) -> Fault | None:
        """The fault for the next request to ``path`` (already without ``/v1``), or ``None``."""
        with self._lock:
            queue = self._queues.get(path)
            if queue:
                return queue.popleft()
            if self.paths is not None and path not in self.paths:
                return None
            queue = self._queues.get(None)
            if queue:
                return queue.popleft()
            if self.rate > 0 and self._rng.random() < self.rate:
                return self._rng.choices(self._choices, self._weights)[0]
            return None

    def pending(self) -> int:
        """How many queued (sequence) items are not yet consumed."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())


# ---------------------------------------------------------------------- what a fault does to a response
def fault_response(fault: Fault) -> Response:
    """The error response of a ``status``, ``unauthorized`` or ``quota_exhausted`` fault."""
    if fault.kind == "unauthorized":
        return error_response(401, "Incorrect API key provided.", "invalid_api_key", "invalid_api_key")
    if fault.kind == "quota_exhausted":
        msg = "You exceeded your current quota, please check your plan and billing details."
        return error_response(429, msg, "insufficient_quota", "insufficient_quota")
    status = fault.status_code or 500
    if status == 429:
        msg, type_, code = "Rate limit reached for requests.", "rate_limit_exceeded", "rate_limit_exceeded"
    elif status >= 500:
        msg, type_, code = "The server had an error while processing your request.", "server_error", None
    else:
        msg, type_, code = f"Injected error {status}.", "invalid_request_error", None
    headers = {} if fault.retry_after is None else {"retry-after": format(fault.retry_after, "g")}
    return Response(status, error_body(fault.message or msg, type_, code), headers)


def apply_fault(fault: Fault, result: Response | StreamReply) -> Response | StreamReply:
    """Spoil a normal response as ``malformed_json``, ``stream_cut`` or ``stream_error`` say."""
    if fault.kind == "stream_error":
        err = error_body(fault.message or "", fault.error_type or "server_error", fault.code)
        if isinstance(result, Response):
            return Response(500, err, result.headers)
        events = [*result.events[: fault.after_events], b"data: " + dumps(err) + b"\n\n"]
        return StreamReply(events, min(result.content_events, fault.after_events - 1), False, result.headers)
    if fault.kind == "stream_cut":
        if isinstance(result, Response):
            return Response(result.status, result.body, result.headers, result.content_type, cut=True)
        events = result.events[: fault.after_events]
        return StreamReply(events, min(result.content_events, fault.after_events - 1), True, result.headers)
    if fault.kind == "malformed_json":
        if isinstance(result, Response):
            if result.status != 200:
                return result
            data, content_type = result.encode()
            return Response(200, data[: max(1, len(data) // 2)], result.headers, content_type)
        first = result.events[0]
        return StreamReply([first[: len(first) // 2] + b"\n\n", result.events[-1]], 0, False, result.headers)
    return result

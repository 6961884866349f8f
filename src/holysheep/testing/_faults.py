"""Fault descriptions and the plan that decides which request gets which fault."""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Union

from ._fault import Fault
from ._replies import dumps, error_body
from ._responses import Response, StreamReply, error_response

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


def _kept(result: StreamReply, after_events: int) -> int:
    """How many content events are among the first ``after_events`` events."""
    return max(0, min(result.content_events, after_events - result.first_content))


def apply_fault(fault: Fault, result: Response | StreamReply) -> Response | StreamReply:
    """Spoil a normal response as ``malformed_json``, ``stream_cut`` or ``stream_error`` say."""
    if fault.kind == "stream_error":
        err = error_body(fault.message or "", fault.error_type or "server_error", fault.code)
        if isinstance(result, Response):
            return Response(500, err, result.headers)
        events = [*result.events[: fault.after_events], b"data: " + dumps(err) + b"\n\n"]
        return replace(result, events=events, content_events=_kept(result, fault.after_events), cut=False)
    if fault.kind == "stream_cut":
        if isinstance(result, Response):
            return Response(result.status, result.body, result.headers, result.content_type, cut=True)
        events = result.events[: fault.after_events]
        return replace(result, events=events, content_events=_kept(result, fault.after_events), cut=True)
    if fault.kind == "malformed_json":
        if isinstance(result, Response):
            if result.status != 200:
                return result
            data, content_type = result.encode()
            return Response(200, data[: max(1, len(data) // 2)], result.headers, content_type)
        first = result.events[0]
        return StreamReply([first[: len(first) // 2] + b"\n\n", result.events[-1]], 0, False, result.headers)
    return result

"""What hooks receive: the context of a call or a batch, and one event object per step (pure data).

``hooks.py`` owns the mechanism (``Hooks``, ``HookSet``, the process-wide registry); this module owns the
objects it passes around. A context reaches its hooks through the ``Emitter`` protocol only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from holysheep._core.stream_state import StreamMetrics, StreamState

__all__ = [
    "BatchContext",
    "BatchEvent",
    "BatchItemEvent",
    "CallContext",
    "Emitter",
    "Outcome",
    "RequestEvent",
    "ResponseEvent",
    "StreamEndEvent",
    "StreamEvent",
    "ToolEvent",
]

Outcome = Literal["success", "retry", "fallback", "error"]


class Emitter(Protocol):
    """Where a context sends its events (a ``HookSet``)."""

    def wants(self, method: str) -> bool:
        """Whether any hook implements ``method``."""
        ...

    def emit(self, method: str, event: object) -> None:
        """Call ``method`` on every hook that implements it, with ``event``."""
        ...

    def around_send(self, event: RequestEvent) -> AbstractContextManager[None]:
        """What the shell enters while ``event``'s attempt is sent: every hook's ``around_send`` context."""
        ...


# ---------------------------------------------------------------------------------------------- contexts
class BatchContext:
    """One batch, as hooks see it: ``state`` is a dict a hook may keep its own data in (key it by the hook).
    ``started_at`` is read from ``clock`` (the engine's)."""

    __slots__ = ("__weakref__", "concurrency", "ended", "hooks", "model", "started_at", "state", "stats", "total")

    def __init__(self, hooks: Emitter, *, total: int | None, concurrency: int, model: str | None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.hooks = hooks
        self.total = total
        self.concurrency = concurrency
        self.model = model
        self.stats: Any = None
        self.started_at = clock()
        self.state: dict[Any, Any] = {}
        self.ended = False


class CallContext:
    """One logical call across its attempts and endpoints. The same object comes with every event of
    the call; ``state`` is a dict a hook may keep its own data in (key it by the hook).

    ``operation`` is ``"chat"``, ``"embeddings"``, ... (from the path); ``body`` is the request body as
    sent to the primary (it holds the messages: a hook that records it must honour its own privacy
    switch); ``batch`` is the ``BatchContext`` of the batch the call belongs to, if any. ``clock`` (the
    client config's) gives ``started_at`` and every event's ``elapsed_s``. ``lazy_body``: a
    ``with_streaming_response`` call without ``stream=True``, whose ``on_body_end`` follows ``on_response``.
    ``defaulted``: the body keys the SDK filled in itself (embeddings' base64 ``encoding_format``), which the
    caller did not set. ``wire``: the `WireFormat` that built the request (None for a plain chat completion or a
    request another client built).
    """

    __slots__ = ("_pending", "attempts", "batch", "body", "clock", "defaulted", "hooks", "lazy_body", "live",
                 "method", "operation", "path", "request", "started_at", "state", "stream", "wire", "wraps_send")

    def __init__(self, hooks: Emitter, method: str, path: str, body: Mapping[str, object] | None,
                 stream: bool, clock: Callable[[], float] = time.perf_counter) -> None:
        self.hooks = hooks
        self.clock = clock
        self.method = method
        self.path = path
        self.operation = _operation(path)
        self.body = body
        self.stream = stream
        self.lazy_body = False
        self.defaulted: frozenset[str] = frozenset()  # body keys the SDK set, not the caller
        self.wire: object = None
        self.batch: BatchContext | None = None
        self.attempts = 0
        self.started_at = 0.0
        self.state: dict[Any, Any] = {}
        self.live = False  # a stream handed to the caller: its chunk and end events go out at once
        self._pending: list[tuple[str, object]] | None = None
        self.request: RequestEvent | None = None  # the attempt begun last
        self.wraps_send = hooks.wants("around_send")  # else the shells send without entering `sending()`

    @property
    def model(self) -> str | None:
        """The model the request asks for."""
        model = self.body.get("model") if self.body else None
        return model if isinstance(model, str) else None

    # ---- what the core calls
    def request_sent(self, attempt_retries: int, served_by: str, url: str, host: str, port: int,
                     set_header: Callable[[str, str], None] | None = None) -> None:
        if self.attempts == 0:
            self.started_at = self.clock()
        self.attempts += 1
        self._pending = None  # a stream that ended before its first event is retried: forget its end
        event = self.request = RequestEvent(self, self.attempts, attempt_retries, served_by, url, host, port,
                                            set_header)
        self.hooks.emit("on_request", event)

    def sending(self) -> AbstractContextManager[None]:
        """What the shells enter around sending the attempt begun last (only when ``wraps_send``)."""
        assert self.request is not None
        return self.hooks.around_send(self.request)

    def stream_event(self, method: str, event: object) -> None:
        """A stream's chunk or end: sent at once while the stream is live, else kept until it is."""
        if self.live:
            self.hooks.emit(method, event)
        else:
            if self._pending is None:
                self._pending = []
            self._pending.append((method, event))

    def go_live(self) -> None:
        """The stream was handed to the caller (after ``on_response``): send what was kept."""
        self.live = True
        pending, self._pending = self._pending, None
        for method, event in pending or ():
            self.hooks.emit(method, event)


def _operation(path: str) -> str:
    if path.endswith("chat/completions"):
        return "chat"
    if path.endswith("embeddings"):
        return "embeddings"
    if path.endswith("completions"):
        return "text_completion"
    return path.rsplit("/", 1)[-1] or path


# ------------------------------------------------------------------------------------------------ events
class RequestEvent:
    """An attempt is about to go out. ``attempt``: 1, 2, ... across the whole call; ``retries_taken``:
    retries so far on the endpoint it goes to; ``served_by``: ``"primary"`` or the fallback's name;
    ``url``, ``host``, ``port``: where it goes (no credentials ever appear in them). `set_header` adds a
    header to the attempt (trace context)."""

    __slots__ = ("_set_header", "attempt", "ctx", "host", "port", "retries_taken", "served_by", "url")

    def __init__(self, ctx: CallContext, attempt: int, retries_taken: int, served_by: str, url: str, host: str,
                 port: int, set_header: Callable[[str, str], None] | None = None) -> None:
        self.ctx, self.attempt, self.retries_taken = ctx, attempt, retries_taken
        self.served_by, self.url, self.host, self.port = served_by, url, host, port
        self._set_header = set_header

    def set_header(self, name: str, value: str) -> None:
        """Send ``name: value`` with this attempt (and the call's later ones, until set again), as a trace
        propagator does with ``traceparent``, from ``on_request`` or ``around_send``. The SDK's own headers
        (authorization, content type, idempotency key, retry count) are kept: setting one raises ValueError."""
        if self._set_header is not None:
            self._set_header(name, value)


class ResponseEvent:
    """An attempt ended. ``outcome``: ``"success"``, ``"retry"`` (after ``delay_s``), ``"fallback"`` (the
    next endpoint is tried at once) or ``"error"`` (the call raises ``error``). ``status_code`` is None for a
    transport failure; ``elapsed_s`` runs from the call's first attempt; ``response`` is the parsed value
    (or the stream) on success."""

    __slots__ = ("attempt", "ctx", "delay_s", "elapsed_s", "error", "outcome", "request_id", "response",
                 "retries_taken", "served_by", "status_code")

    def __init__(self, ctx: CallContext, outcome: Outcome, *, status_code: int | None, request_id: str | None,
                 retries_taken: int, served_by: str, error: Any = None, response: Any = None,
                 delay_s: float | None = None) -> None:
        self.ctx, self.outcome, self.attempt = ctx, outcome, ctx.attempts
        self.status_code, self.request_id, self.retries_taken = status_code, request_id, retries_taken
        self.served_by, self.error, self.response, self.delay_s = served_by, error, response, delay_s
        self.elapsed_s = ctx.clock() - ctx.started_at


class StreamEvent:
    """A stream's first chunk: ``elapsed_s`` from the call's first attempt, ``chunk`` the chunk itself."""

    __slots__ = ("chunk", "ctx", "elapsed_s")

    def __init__(self, ctx: CallContext, chunk: object, at: float) -> None:
        self.ctx, self.chunk, self.elapsed_s = ctx, chunk, at - ctx.started_at


class StreamEndEvent:
    """A stream ended. ``error`` is its typed error (None when it ended well or was ``closed`` early by the
    caller); ``metrics`` are its ``StreamMetrics``; ``elapsed_s`` runs from the call's first attempt. The
    properties read what arrived: ``response_id``, ``response_model``, ``finish_reasons``, ``usage``, ``text``.
    """

    __slots__ = ("_state", "closed", "ctx", "elapsed_s", "error")

    def __init__(self, ctx: CallContext, state: StreamState, error: BaseException | None, closed: bool) -> None:
        self.ctx, self._state, self.error, self.closed = ctx, state, error, closed
        end = state.ended_at
        self.elapsed_s = (end if end is not None else ctx.clock()) - ctx.started_at

    @property
    def metrics(self) -> StreamMetrics:
        """TTFT, inter-token latency and throughput of the stream."""
        return self._state.metrics()

    @property
    def chunks(self) -> int:
        """Chunks received."""
        return self._state.chunks

    @property
    def response_id(self) -> str | None:
        first = self._state._first
        return first.id if first is not None else None

    @property
    def response_model(self) -> str | None:
        first = self._state._first
        return first.model if first is not None else None

    @property
    def finish_reasons(self) -> list[str]:
        """Finish reasons by choice index (those that arrived)."""
        finish = self._state.finish
        return [str(finish[i]) for i in sorted(finish) if finish[i] is not None]

    @property
    def usage(self) -> object:
        """The ``usage`` the server sent (``stream_options={"include_usage": True}``), or None."""
        return self._state._usage

    @property
    def text(self) -> str:
        """The content received (choice 0)."""
        return self._state.partial_text

    @property
    def tool_calls(self) -> list[dict[str, object]]:
        """The tool calls received (choice 0), as ``{"id", "type", "function": {"name", "arguments"}}`` dicts."""
        from holysheep._core.scrub import scrub_assembled  # the state keeps what arrived: mask what leaves

        state = self._state
        calls = state._tools.get(0)
        return scrub_assembled([state._tool_call(0, i) for i in sorted(calls)]) if calls else []

    @property
    def chunk_gaps(self) -> list[float]:
        """Seconds between successive output chunks (content, reasoning, refusal or tool-call deltas), in order:
        every gap up to 65,536 of them, then an evenly spaced sample (the stream's bounded record)."""
        return list(self._state._gaps)


class BatchEvent:
    """A batch started or ended; ``batch.stats`` is its ``BatchStats`` (live figures)."""

    __slots__ = ("batch",)

    def __init__(self, batch: BatchContext) -> None:
        self.batch = batch


class BatchItemEvent:
    """A batch item finished: ``result`` is its ``BatchResult`` (``ok``, ``response``, ``error``, ``attempts``)."""

    __slots__ = ("batch", "result")

    def __init__(self, batch: BatchContext, result: object) -> None:
        self.batch, self.result = batch, result


class ToolEvent:
    """A tool call run by the tool runner: ``name``, ``call_id``, ``arguments`` (a JSON string), ``batch`` (the
    batch whose item runs it, or None), and on ``on_tool_end`` ``result`` or ``error`` and ``elapsed_s``.
    ``state`` is shared by the start and end events; ``elapsed_s`` is read from ``clock`` (the tool runner's)."""

    __slots__ = ("_clock", "arguments", "batch", "call_id", "elapsed_s", "error", "hooks", "name", "result",
                 "started_at", "state")

    def __init__(self, hooks: Emitter, name: str, call_id: str | None, arguments: str | None,
                 batch: BatchContext | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        self.hooks = hooks
        self._clock = clock
        self.batch = batch
        self.name, self.call_id, self.arguments = name, call_id, arguments
        self.result: Any = None
        self.error: BaseException | None = None
        self.started_at = clock()
        self.elapsed_s = 0.0
        self.state: dict[Any, Any] = {}

    def finish(self, result: object = None, error: BaseException | None = None) -> None:
        """The tool returned ``result`` (or raised ``error``): tell the hooks."""
        self.result, self.error = result, error
        self.elapsed_s = self._clock() - self.started_at
        self.hooks.emit("on_tool_end", self)

"""Hooks: the one place where the clients, the batch and the tool runner report what happens to a call.

Pure code: no I/O, no clock but ``time.perf_counter``. A ``HookSet`` is built once per client (and once for
the process-wide hooks an instrumentor registers); a call that has no hooks carries ``ctx = None`` and pays
one ``is None`` test per step. A hook that raises is logged once and never breaks the call.

Order of the events of one logical call (retries and fallbacks included)::

    on_request(attempt=1) -> on_response(outcome="retry") -> on_request(attempt=2) -> on_response("success")
    stream: ... -> on_response("success") -> on_stream_first_chunk -> on_stream_end
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from holysheep._core.log import logger

if TYPE_CHECKING:
    from holysheep._core.stream_state import StreamMetrics, StreamState

__all__ = [
    "BatchContext",
    "BatchEvent",
    "BatchItemEvent",
    "CallContext",
    "HookSet",
    "Hooks",
    "RequestEvent",
    "ResponseEvent",
    "StreamEndEvent",
    "StreamEvent",
    "ToolEvent",
    "active_hooks",
    "check_hooks",
    "register_global_hooks",
    "tool_started",
    "unregister_global_hooks",
]

Outcome = Literal["success", "retry", "fallback", "error"]


class Hooks:
    """Subclass and override the methods you need; pass instances as ``Client(hooks=[...])``.

    Every method gets one event object and returns nothing. A hook runs inline, on the thread (or event
    loop) of the call: keep it short. An exception from a hook is logged once (per hook) and swallowed.
    Any object with some of these method names works too (duck typing).
    """

    def on_request(self, event: RequestEvent) -> None:
        """An attempt is about to be sent (``event.attempt`` counts from 1 across retries and fallbacks)."""

    def on_response(self, event: ResponseEvent) -> None:
        """An attempt ended: a response or an error; ``event.outcome`` says what happens next."""

    def on_stream_first_chunk(self, event: StreamEvent) -> None:
        """A stream's first chunk arrived (after ``on_response`` with ``outcome="success"``)."""

    def on_stream_end(self, event: StreamEndEvent) -> None:
        """A stream ended: read to the end, failed, or closed early by the caller."""

    def on_batch_start(self, event: BatchEvent) -> None:
        """A batch starts sending (in the caller's context: the sync batch's thread inherits it)."""

    def on_batch_item(self, event: BatchItemEvent) -> None:
        """A batch item finished (``event.result`` is its ``BatchResult``)."""

    def on_batch_end(self, event: BatchEvent) -> None:
        """A batch finished, was closed or stopped (``event.batch.stats`` has its figures)."""

    def on_tool_start(self, event: ToolEvent) -> None:
        """The tool runner is about to run a tool call."""

    def on_tool_end(self, event: ToolEvent) -> None:
        """A tool call returned (``event.error`` is set when it raised)."""


_METHODS = ("on_request", "on_response", "on_stream_first_chunk", "on_stream_end", "on_batch_start",
            "on_batch_item", "on_batch_end", "on_tool_start", "on_tool_end")


# ---------------------------------------------------------------------------------------------- contexts
class BatchContext:
    """One batch, as hooks see it: ``state`` is a dict a hook may keep its own data in (key it by the hook)."""

    __slots__ = ("__weakref__", "concurrency", "ended", "hooks", "model", "started_at", "state", "stats", "total")

    def __init__(self, hooks: HookSet, *, total: int | None, concurrency: int, model: str | None) -> None:
        self.hooks = hooks
        self.total = total
        self.concurrency = concurrency
        self.model = model
        self.stats: Any = None
        self.started_at = time.perf_counter()
        self.state: dict[Any, Any] = {}
        self.ended = False


class CallContext:
    """One logical call across its attempts and endpoints. The same object comes with every event of
    the call; ``state`` is a dict a hook may keep its own data in (key it by the hook).

    ``operation`` is ``"chat"``, ``"embeddings"``, ... (from the path); ``body`` is the request body as
    sent to the primary (it holds the messages: a hook that records it must honour its own privacy
    switch); ``batch`` is the ``BatchContext`` of the batch the call belongs to, if any.
    """

    __slots__ = ("_pending", "attempts", "batch", "body", "hooks", "live", "method", "operation", "path",
                 "started_at", "state", "stream")

    def __init__(self, hooks: HookSet, method: str, path: str, body: Mapping[str, Any] | None,
                 stream: bool) -> None:
        self.hooks = hooks
        self.method = method
        self.path = path
        self.operation = _operation(path)
        self.body = body
        self.stream = stream
        self.batch: BatchContext | None = None
        self.attempts = 0
        self.started_at = 0.0
        self.state: dict[Any, Any] = {}
        self.live = False  # a stream handed to the caller: its chunk and end events go out at once
        self._pending: list[tuple[str, Any]] | None = None

    @property
    def model(self) -> str | None:
        """The model the request asks for."""
        model = self.body.get("model") if self.body else None
        return model if isinstance(model, str) else None

    # ---- what the core calls
    def request_sent(self, attempt_retries: int, served_by: str, url: str, host: str, port: int) -> None:
        if self.attempts == 0:
            self.started_at = time.perf_counter()
        self.attempts += 1
        self._pending = None  # a stream that ended before its first event is retried: forget its end
        self.hooks.emit("on_request", RequestEvent(self, self.attempts, attempt_retries, served_by, url, host, port))

    def stream_event(self, method: str, event: Any) -> None:
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
    ``url``, ``host``, ``port``: where it goes (no credentials ever appear in them)."""

    __slots__ = ("attempt", "ctx", "host", "port", "retries_taken", "served_by", "url")

    def __init__(self, ctx: CallContext, attempt: int, retries_taken: int, served_by: str, url: str, host: str,
                 port: int) -> None:
        self.ctx, self.attempt, self.retries_taken = ctx, attempt, retries_taken
        self.served_by, self.url, self.host, self.port = served_by, url, host, port


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
        self.elapsed_s = time.perf_counter() - ctx.started_at


class StreamEvent:
    """A stream's first chunk: ``elapsed_s`` from the call's first attempt, ``chunk`` the chunk itself."""

    __slots__ = ("chunk", "ctx", "elapsed_s")

    def __init__(self, ctx: CallContext, chunk: Any, at: float) -> None:
        self.ctx, self.chunk, self.elapsed_s = ctx, chunk, at - ctx.started_at


class StreamEndEvent:
    """A stream ended. ``error`` is its typed error (None when it ended well or was ``closed`` early by the
    caller); ``metrics`` are its ``StreamMetrics``; ``elapsed_s`` runs from the call's first attempt. The
    properties read what arrived: ``response_id``, ``response_model``, ``finish_reasons``, ``usage``, ``text``.
    """

    __slots__ = ("_state", "closed", "ctx", "elapsed_s", "error")

    def __init__(self, ctx: CallContext, state: StreamState, error: BaseException | None, closed: bool) -> None:
        self.ctx, self._state, self.error, self.closed = ctx, state, error, closed
        self.elapsed_s = (state.ended_at or time.perf_counter()) - ctx.started_at

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
    def usage(self) -> Any:
        """The ``usage`` the server sent (``stream_options={"include_usage": True}``), or None."""
        return self._state._usage

    @property
    def text(self) -> str:
        """The content received (choice 0)."""
        return self._state.partial_text


class BatchEvent:
    """A batch started or ended; ``batch.stats`` is its ``BatchStats`` (live figures)."""

    __slots__ = ("batch",)

    def __init__(self, batch: BatchContext) -> None:
        self.batch = batch


class BatchItemEvent:
    """A batch item finished: ``result`` is its ``BatchResult`` (``ok``, ``response``, ``error``, ``attempts``)."""

    __slots__ = ("batch", "result")

    def __init__(self, batch: BatchContext, result: Any) -> None:
        self.batch, self.result = batch, result


class ToolEvent:
    """A tool call run by the tool runner: ``name``, ``call_id``, ``arguments`` (a JSON string), ``batch`` (the
    batch whose item runs it, or None), and on ``on_tool_end`` ``result`` or ``error`` and ``elapsed_s``.
    ``state`` is shared by the start and end events."""

    __slots__ = ("arguments", "batch", "call_id", "elapsed_s", "error", "hooks", "name", "result", "started_at",
                 "state")

    def __init__(self, hooks: HookSet, name: str, call_id: str | None, arguments: str | None,
                 batch: BatchContext | None = None) -> None:
        self.hooks = hooks
        self.batch = batch
        self.name, self.call_id, self.arguments = name, call_id, arguments
        self.result: Any = None
        self.error: BaseException | None = None
        self.started_at = time.perf_counter()
        self.elapsed_s = 0.0
        self.state: dict[Any, Any] = {}

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """The tool returned ``result`` (or raised ``error``): tell the hooks."""
        self.result, self.error = result, error
        self.elapsed_s = time.perf_counter() - self.started_at
        self.hooks.emit("on_tool_end", self)


def tool_started(hooks: HookSet | None, name: str, call_id: str | None, arguments: str | None,
                 batch: BatchContext | None = None) -> ToolEvent | None:
    """The tool runner is about to run a call: its ``ToolEvent`` (call ``finish`` on it afterwards), or None
    when no hook listens to tools. ``batch``: the batch whose item runs it, if any."""
    if hooks is None or not (hooks.methods["on_tool_start"] or hooks.methods["on_tool_end"]):
        return None
    event = ToolEvent(hooks, name, call_id, arguments, batch)
    hooks.emit("on_tool_start", event)
    return event


# -------------------------------------------------------------------------------------------- the hook set
_warned_refs: weakref.WeakSet[Any] = weakref.WeakSet()
_warned_ids: set[int] = set()


def _warn_once(hook: Any, method: str, exc: BaseException) -> None:
    try:
        if hook in _warned_refs:
            return
        _warned_refs.add(hook)
    except TypeError:  # not weak-referenceable (slots without __weakref__)
        if id(hook) in _warned_ids:
            return
        _warned_ids.add(id(hook))
    logger.warning("holysheep hook %s.%s raised %s: %s (ignored; logged once per hook)",
                   type(hook).__name__, method, type(exc).__name__, exc)


def _implements(hook: Any, method: str) -> bool:
    fn = getattr(hook, method, None)
    if fn is None or not callable(fn):
        return False
    base = getattr(Hooks, method)
    return getattr(fn, "__func__", None) is not base  # an inherited no-op is skipped


class HookSet:
    """Hooks ready to call: for each event, only the hooks that implement it (built once)."""

    __slots__ = ("_merged", "hooks", "methods")

    def __init__(self, hooks: Iterable[Any]) -> None:
        self.hooks: tuple[Any, ...] = tuple(hooks)
        self.methods: dict[str, tuple[tuple[Any, Callable[[Any], None]], ...]] = {
            name: tuple((h, getattr(h, name)) for h in self.hooks if _implements(h, name)) for name in _METHODS}
        self._merged: tuple[HookSet, HookSet] | None = None  # (the global set, self + it)

    def wants(self, method: str) -> bool:
        """Whether any hook implements ``method``."""
        return bool(self.methods[method])

    def emit(self, method: str, event: Any) -> None:
        """Call every hook's ``method`` with ``event``; a hook that raises is logged once and skipped."""
        for hook, fn in self.methods[method]:
            try:
                fn(event)
            except Exception as exc:
                _warn_once(hook, method, exc)

    def merged(self, other: HookSet) -> HookSet:
        cached = self._merged
        if cached is not None and cached[0] is other:
            return cached[1]
        merged = HookSet((*self.hooks, *(h for h in other.hooks if h not in self.hooks)))
        self._merged = (other, merged)
        return merged

    def __repr__(self) -> str:
        return f"HookSet({', '.join(type(h).__name__ for h in self.hooks)})"


def check_hooks(hooks: object) -> HookSet | None:
    """``Client(hooks=...)``: a list of hook objects (``Hooks`` subclasses, or objects with some ``on_*``
    methods), checked before any request. None or empty: no hooks."""
    if hooks is None:
        return None
    if isinstance(hooks, HookSet):
        return hooks if hooks.hooks else None
    from holysheep._exceptions import InvalidRequestError

    if isinstance(hooks, (str, bytes, Mapping)) or not isinstance(hooks, Iterable):
        raise InvalidRequestError(
            f"hooks must be a list of hook objects (holysheep.Hooks subclasses), got {type(hooks).__name__}. "
            "For example hooks=[MyHooks()].", field="hooks")
    items = list(hooks)
    for i, hook in enumerate(items):
        if isinstance(hook, type) or not any(callable(getattr(hook, m, None)) for m in _METHODS):
            what = f"the class {hook.__name__}" if isinstance(hook, type) else type(hook).__name__
            raise InvalidRequestError(
                f"hooks[{i}] is {what}, which has none of the hook methods ({', '.join(_METHODS)}). Pass an "
                "instance of a holysheep.Hooks subclass, e.g. hooks=[MyHooks()].", field=f"hooks[{i}]")
    return HookSet(items) if items else None


class _Registry:
    __slots__ = ("hooks", "set")

    def __init__(self) -> None:
        self.hooks: list[Any] = []
        self.set: HookSet | None = None


GLOBAL = _Registry()
"""Process-wide hooks (what an instrumentor registers): every client's calls report to them."""


def register_global_hooks(hook: Any) -> None:
    """Report every client's calls to ``hook`` too (what ``HolySheepInstrumentor.instrument()`` does)."""
    if hook not in GLOBAL.hooks:
        check_hooks([hook])
        GLOBAL.hooks.append(hook)
        GLOBAL.set = HookSet(GLOBAL.hooks)


def unregister_global_hooks(hook: Any) -> None:
    """Stop reporting to ``hook`` (calls already running may still report to it)."""
    if hook in GLOBAL.hooks:
        GLOBAL.hooks.remove(hook)
        GLOBAL.set = HookSet(GLOBAL.hooks) if GLOBAL.hooks else None


def active_hooks(local: HookSet | None) -> HookSet | None:
    """A client's hooks together with the process-wide ones (None when there are none at all)."""
    glob = GLOBAL.set
    if glob is None:
        return local
    if local is None:
        return glob
    return local.merged(glob)

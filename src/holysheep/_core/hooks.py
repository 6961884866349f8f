"""Hooks: the one place where the clients, the batch and the tool runner report what happens to a call.

Pure code: no I/O, and no clock of its own: the contexts and events read the clock they are given (the
client config's ``clock``, ``time.perf_counter`` unless a test injects one). A ``HookSet`` is built once per
client (and once for the process-wide hooks an instrumentor registers); a call that has no hooks carries
``ctx = None`` and pays one ``is None`` test per step. A hook that raises is logged once and never breaks the call.

Order of the events of one logical call (retries and fallbacks included)::

    on_request(attempt=1) -> around_send (entered while it is sent) -> on_response(outcome="retry")
    -> on_request(attempt=2) -> around_send -> on_response("success")
    stream: ... -> on_response("success") -> on_stream_first_chunk -> on_stream_end
    with_streaming_response, no stream=True: ... -> on_response("success") (at the headers) -> on_body_end
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from holysheep._core.body_report import BodyEndEvent
from holysheep._core.hook_events import (
    BatchContext,
    BatchEvent,
    BatchItemEvent,
    CallContext,
    Emitter,
    RequestEvent,
    ResponseEvent,
    StreamEndEvent,
    StreamEvent,
    ToolEvent,
)
from holysheep._core.log import logger

__all__ = [
    "BatchContext",
    "BatchEvent",
    "BatchItemEvent",
    "BodyEndEvent",
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

class Hooks:
    """Subclass and override the methods you need; pass instances as ``Client(hooks=[...])``.

    Every method gets one event object and returns nothing. A hook runs inline, on the thread (or event
    loop) of the call: keep it short. An exception from a hook is logged once (per hook) and swallowed.
    Any object with some of these method names works too (duck typing).
    """

    def on_request(self, event: RequestEvent) -> None:
        """An attempt is about to be sent (``event.attempt`` counts from 1 across retries and fallbacks)."""

    def around_send(self, event: RequestEvent) -> AbstractContextManager[None] | None:
        """A context manager to enter while the attempt of ``event`` (after its ``on_request``) is sent, on the
        thread or task that sends it: what is current there is current for the HTTP client (its spans, its
        propagators). None: nothing to enter."""
        return None

    def on_response(self, event: ResponseEvent) -> None:
        """An attempt ended: a response or an error; ``event.outcome`` says what happens next."""

    def on_stream_first_chunk(self, event: StreamEvent) -> None:
        """A stream's first chunk arrived (after ``on_response`` with ``outcome="success"``)."""

    def on_stream_end(self, event: StreamEndEvent) -> None:
        """A stream ended: read to the end, failed, or closed early by the caller."""

    def on_body_end(self, event: BodyEndEvent) -> None:
        """A body handed over unread (``with_streaming_response`` without ``stream=True``) was read to its end,
        failed, or was closed: ``event.read`` says how much; ``event.response`` is the parsed reply when whole."""

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


_METHODS = ("on_request", "around_send", "on_response", "on_stream_first_chunk", "on_stream_end", "on_body_end",
            "on_batch_start", "on_batch_item", "on_batch_end", "on_tool_start", "on_tool_end")


def tool_started(hooks: Emitter | None, name: str, call_id: str | None, arguments: str | None,
                 batch: BatchContext | None = None, *,
                 clock: Callable[[], float] = time.perf_counter) -> ToolEvent | None:
    """The tool runner is about to run a call: its ``ToolEvent`` (call ``finish`` on it afterwards), or None
    when no hook listens to tools. ``batch``: the batch whose item runs it, if any; ``clock``: where its
    ``elapsed_s`` is read (the tool runner's)."""
    if hooks is None or not (hooks.wants("on_tool_start") or hooks.wants("on_tool_end")):
        return None
    event = ToolEvent(hooks, name, call_id, arguments, batch, clock)
    hooks.emit("on_tool_start", event)
    return event


# -------------------------------------------------------------------------------------------- the hook set
_warned_refs: weakref.WeakSet[Any] = weakref.WeakSet()
_warned_ids: set[int] = set()


def _warn_once(hook: object, method: str, exc: BaseException) -> None:
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


def _implements(hook: object, method: str) -> bool:
    fn = getattr(hook, method, None)
    if fn is None or not callable(fn):
        return False
    base = getattr(Hooks, method)
    return getattr(fn, "__func__", None) is not base  # an inherited no-op is skipped


class HookSet:
    """Hooks ready to call: for each event, only the hooks that implement it (built once)."""

    __slots__ = ("_merged", "hooks", "methods")

    def __init__(self, hooks: Iterable[object]) -> None:
        self.hooks: tuple[object, ...] = tuple(hooks)
        self.methods: dict[str, tuple[tuple[Any, Callable[[Any], None]], ...]] = {
            name: tuple((h, getattr(h, name)) for h in self.hooks if _implements(h, name)) for name in _METHODS}
        self._merged: tuple[HookSet, HookSet] | None = None  # (the global set, self + it)

    def wants(self, method: str) -> bool:
        """Whether any hook implements ``method``."""
        return bool(self.methods[method])

    def emit(self, method: str, event: object) -> None:
        """Call every hook's ``method`` with ``event``; a hook that raises is logged once and skipped."""
        for hook, fn in self.methods[method]:
            try:
                fn(event)
            except Exception as exc:
                _warn_once(hook, method, exc)

    def around_send(self, event: RequestEvent) -> _Around:
        """Every hook's ``around_send`` context for ``event``, entered in order and left in reverse."""
        return _Around(self.methods["around_send"], event)

    def merged(self, other: HookSet) -> HookSet:
        cached = self._merged
        if cached is not None and cached[0] is other:
            return cached[1]
        merged = HookSet((*self.hooks, *(h for h in other.hooks if h not in self.hooks)))
        self._merged = (other, merged)
        return merged

    def __repr__(self) -> str:
        return f"HookSet({', '.join(type(h).__name__ for h in self.hooks)})"


class _Around:
    """The hooks' ``around_send`` contexts of one attempt. A hook that raises (making, entering or leaving its
    context) is logged once and skipped; an error of the send is never swallowed."""

    __slots__ = ("entered", "event", "fns")

    def __init__(self, fns: tuple[tuple[object, Callable[[object], Any]], ...], event: RequestEvent) -> None:
        self.fns, self.event = fns, event
        self.entered: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        for hook, fn in self.fns:
            try:
                manager = fn(self.event)
                if manager is not None:
                    manager.__enter__()
                    self.entered.append((hook, manager))
            except Exception as exc:
                _warn_once(hook, "around_send", exc)

    def __exit__(self, *exc_info: object) -> None:
        entered, self.entered = self.entered, []
        for hook, manager in reversed(entered):
            try:
                manager.__exit__(*exc_info)
            except Exception as exc:
                _warn_once(hook, "around_send", exc)


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
        self.hooks: list[object] = []
        self.set: HookSet | None = None


GLOBAL = _Registry()
"""Process-wide hooks (what an instrumentor registers): every client's calls report to them."""


def register_global_hooks(hook: object) -> None:
    """Report every client's calls to ``hook`` too (what ``HolySheepInstrumentor.instrument()`` does)."""
    if hook not in GLOBAL.hooks:
        check_hooks([hook])
        GLOBAL.hooks.append(hook)
        GLOBAL.set = HookSet(GLOBAL.hooks)


def unregister_global_hooks(hook: object) -> None:
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

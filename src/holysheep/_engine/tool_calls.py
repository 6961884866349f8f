"""Running one turn's tool calls: concurrently in a small thread pool (sync) or with ``asyncio.gather``
(async; a plain function runs in a worker thread, so it does not block the loop; in the sync pool an async
tool runs with ``asyncio.run`` in its thread). Each call's failure becomes its outcome, never an exception.
Shared by ``run_tools`` on both clients and by agent items in a batch.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from holysheep._core.hook_events import BatchContext, Emitter, ToolEvent
from holysheep._core.hooks import tool_started
from holysheep._core.tool_loop import PendingCall, RunTools, ToolOutcome, failed, not_run, result_text

__all__ = ["MAX_TOOL_THREADS", "clock", "run_turn", "run_turn_async"]

MAX_TOOL_THREADS = 8
"""The sync runner runs at most this many calls of one turn at a time."""

clock: Callable[[], float] = time.perf_counter
"""Where tool durations (``ToolOutcome.duration_s`` and the hooks' ``ToolEvent.elapsed_s``) are read from (tests
replace it)."""


def _finish(pending: PendingCall, start: float, output: Any) -> ToolOutcome:
    return ToolOutcome(result_text(output), output, None, _now() - start)


def _started(pending: PendingCall, hooks: Emitter | None, batch: BatchContext | None) -> ToolEvent | None:
    """Tell the hooks a call starts (None when no hook listens to tools)."""
    if hooks is None:
        return None
    return tool_started(hooks, pending.name, pending.id, pending.call.function.arguments, batch, clock=_now)


def _run_one(pending: PendingCall, hooks: Emitter | None = None, batch: BatchContext | None = None) -> ToolOutcome:
    if pending.error is not None or pending.tool is None or pending.arguments is None:
        return not_run(pending)
    event = _started(pending, hooks, batch)
    start = _now()
    try:
        output = pending.tool.invoke(pending.arguments)
        if inspect.isawaitable(output):
            output = asyncio.run(_awaited(output))
        outcome = _finish(pending, start, output)
    except Exception as exc:  # reported to the model as the tool's result
        if event is not None:
            event.finish(error=exc)
        return failed(pending, exc, _now() - start)
    if event is not None:
        event.finish(output)
    return outcome


async def _awaited(value: Any) -> Any:
    return await value


def run_turn(step: RunTools, hooks: Emitter | None = None) -> list[ToolOutcome]:
    """Run one turn's calls: alone inline, several in a pool of up to `MAX_TOOL_THREADS` threads (each in a copy
    of the caller's context, so a tracing span current here is current in the tool too). ``hooks`` hear each
    call's start and end."""
    if len(step.calls) == 1:
        return [_run_one(step.calls[0], hooks)]
    contexts = [contextvars.copy_context() for _ in step.calls]
    with ThreadPoolExecutor(min(MAX_TOOL_THREADS, len(step.calls)), thread_name_prefix="holysheep-tool") as pool:
        return list(pool.map(lambda ctx, pending: ctx.run(_run_one, pending, hooks), contexts, step.calls))


async def _arun_one(pending: PendingCall, hooks: Emitter | None = None,
                    batch: BatchContext | None = None) -> ToolOutcome:
    if pending.error is not None or pending.tool is None or pending.arguments is None:
        return not_run(pending)
    tool, arguments = pending.tool, pending.arguments
    event = _started(pending, hooks, batch)
    start = _now()
    try:
        if inspect.iscoroutinefunction(tool.handler):
            output = await tool.invoke(arguments)
        else:
            output = await asyncio.to_thread(tool.invoke, arguments)
            if inspect.isawaitable(output):
                output = await output
        outcome = _finish(pending, start, output)
    except Exception as exc:  # reported to the model as the tool's result
        if event is not None:
            event.finish(error=exc)
        return failed(pending, exc, _now() - start)
    if event is not None:
        event.finish(output)
    return outcome


async def run_turn_async(step: RunTools, hooks: Emitter | None = None,
                         batch: BatchContext | None = None) -> list[ToolOutcome]:
    """Run one turn's calls concurrently with ``asyncio.gather`` (results in call order); ``hooks`` hear each
    call's start and end (``batch``: the batch whose agent item runs them)."""
    return list(await asyncio.gather(*(_arun_one(p, hooks, batch) for p in step.calls)))


def _now() -> float:
    return clock()

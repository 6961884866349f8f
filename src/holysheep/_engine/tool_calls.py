"""Running one turn's tool calls, concurrently, in the SDK's own threads (`ToolPool`, ``tool_threads`` at once;
never the event loop's default executor). A plain function runs in a pool thread on both clients; an async tool
runs on the caller's loop (async client) or with ``asyncio.run`` in its thread (sync client). A call still
running after the turn's ``tool_timeout`` is given up: its outcome tells the model so (`timed_out`), and its
thread no longer holds a place in the pool. Each call's failure becomes its outcome, never an exception.
Shared by ``run_tools`` on both clients and by agent items in a batch.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from holysheep._core.hook_events import BatchContext, Emitter, ToolEvent
from holysheep._core.hooks import tool_started
from holysheep._core.tool_limits import DEFAULT_TOOL_THREADS
from holysheep._core.tool_loop import PendingCall, RunTools, ToolOutcome, failed, not_run, result_text, timed_out
from holysheep._engine.tool_pool import ToolPool, ToolTimedOut, tool_pool

__all__ = ["clock", "run_turn", "run_turn_async"]

clock: Callable[[], float] = time.perf_counter
"""Where tool durations (``ToolOutcome.duration_s`` and the hooks' ``ToolEvent.elapsed_s``) are read from (tests
replace it)."""

def _finish(pending: PendingCall, start: float, output: object) -> ToolOutcome:
    return ToolOutcome(result_text(output), output, None, _now() - start)


def _started(pending: PendingCall, hooks: Emitter | None, batch: BatchContext | None) -> ToolEvent | None:
    """Tell the hooks a call starts (None when no hook listens to tools)."""
    if hooks is None:
        return None
    return tool_started(hooks, pending.name, pending.id, pending.call.function.arguments, batch, clock=_now)


def _cannot_run(pending: PendingCall) -> bool:
    return pending.error is not None or pending.tool is None or pending.arguments is None


class _Report:
    """A sync call's hook events, told once: by its thread, or by the caller when the call timed out first."""

    __slots__ = ("done", "event", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.event: ToolEvent | None = None
        self.done = False

    def start(self, pending: PendingCall, hooks: Emitter | None) -> None:
        with self.lock:
            if not self.done:
                self.event = _started(pending, hooks, None)

    def end(self, result: Any = None, error: BaseException | None = None) -> None:
        with self.lock:
            event, self.done = (None if self.done else self.event), True
        if event is not None:
            event.finish(result, error)


def _timeout_error(pending: PendingCall, timeout: float) -> TimeoutError:
    """What the hooks hear as the error of a call given up at ``timeout``."""
    return TimeoutError(timed_out(pending, timeout, 0.0).result)


def _run_one(pending: PendingCall, hooks: Emitter | None, timeout: float | None, report: _Report) -> ToolOutcome:
    """One call, in a pool thread: an async tool runs on a loop of its own, cancelled at ``timeout``."""
    assert pending.tool is not None and pending.arguments is not None
    report.start(pending, hooks)
    start = _now()
    try:
        output = pending.tool.invoke(pending.arguments)
        if inspect.isawaitable(output):
            output = asyncio.run(_awaited(output, timeout))
        outcome = _finish(pending, start, output)
    except ToolTimedOut:  # the pool gives the same answer at the same time; this ends the tool's loop
        assert timeout is not None
        report.end(error=_timeout_error(pending, timeout))
        raise
    except Exception as exc:  # reported to the model as the tool's result
        report.end(error=exc)
        return failed(pending, exc, _now() - start)
    report.end(output)
    return outcome


async def _awaited(value: Any, timeout: float | None) -> object:
    loop = asyncio.get_running_loop()
    return await _within(asyncio.ensure_future(value), None if timeout is None else loop.time() + timeout, loop)


def run_turn(step: RunTools, hooks: Emitter | None = None, pool: ToolPool | None = None) -> list[ToolOutcome]:
    """Run one turn's calls in ``pool`` (default: the pool of the default size), each in a copy of the caller's
    context (a tracing span current here is current in the tool too) and given up ``step.timeout`` seconds
    after it started; ``hooks`` hear each call's start and end."""
    pool = pool or tool_pool(DEFAULT_TOOL_THREADS)
    started = _now()
    runs: list[tuple[Future[ToolOutcome], _Report] | None] = []
    for pending in step.calls:
        if _cannot_run(pending):
            runs.append(None)
            continue
        ctx, report = contextvars.copy_context(), _Report()
        call = functools.partial(ctx.run, _run_one, pending, hooks, step.timeout, report)
        runs.append((pool.submit(call, step.timeout), report))
    outcomes: list[ToolOutcome] = []
    for pending, run in zip(step.calls, runs, strict=True):
        if run is None:
            outcomes.append(not_run(pending))
            continue
        try:
            outcomes.append(run[0].result())
        except ToolTimedOut:  # _run_one returns the tool's own errors as outcomes: this is the pool's
            assert step.timeout is not None
            run[1].end(error=_timeout_error(pending, step.timeout))  # the abandoned thread tells nothing more
            outcomes.append(timed_out(pending, step.timeout, _now() - started))
    return outcomes


async def _arun_one(pending: PendingCall, hooks: Emitter | None, batch: BatchContext | None,
                    pool: ToolPool, timeout: float | None) -> ToolOutcome:
    if _cannot_run(pending):
        return not_run(pending)
    tool, arguments = pending.tool, pending.arguments
    assert tool is not None and arguments is not None
    event = _started(pending, hooks, batch)
    start = _now()
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    try:
        if inspect.iscoroutinefunction(tool.handler):
            output = await _within(asyncio.ensure_future(tool.invoke(arguments)), deadline, loop)
        else:
            ctx = contextvars.copy_context()
            output = await asyncio.wrap_future(pool.submit(functools.partial(ctx.run, tool.invoke, arguments),
                                                           timeout))
            if inspect.isawaitable(output):
                output = await _within(asyncio.ensure_future(output), deadline, loop)
        outcome = _finish(pending, start, output)
    except ToolTimedOut:
        assert timeout is not None
        if event is not None:
            event.finish(error=_timeout_error(pending, timeout))
        return timed_out(pending, timeout, _now() - start)
    except Exception as exc:  # reported to the model as the tool's result
        if event is not None:
            event.finish(error=exc)
        return failed(pending, exc, _now() - start)
    if event is not None:
        event.finish(output)
    return outcome


async def _within(task: asyncio.Future[object], deadline: float | None, loop: asyncio.AbstractEventLoop) -> Any:
    """``task``'s result, or `ToolTimedOut` (``task`` cancelled) at ``deadline`` (the loop's clock)."""
    if deadline is None:
        return await task
    done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
    if not done:
        task.cancel()
        raise ToolTimedOut
    return task.result()


async def run_turn_async(step: RunTools, hooks: Emitter | None = None, batch: BatchContext | None = None,
                         pool: ToolPool | None = None) -> list[ToolOutcome]:
    """Run one turn's calls concurrently (results in call order): plain functions in ``pool`` (default: the
    pool of the default size), async ones on this loop, each given up after ``step.timeout``; ``hooks`` hear
    each call's start and end (``batch``: the batch whose agent item runs them)."""
    pool = pool or tool_pool(DEFAULT_TOOL_THREADS)
    return list(await asyncio.gather(*(_arun_one(p, hooks, batch, pool, step.timeout) for p in step.calls)))


def _now() -> float:
    return clock()

"""The SDK's own threads for tool calls (``run_tools`` on both clients, and agents in a batch), not the event
loop's default executor: at most ``size`` calls run at once, each in a daemon thread (a hung tool never keeps
the process from exiting). A call still running ``timeout`` seconds after it started (time in the queue does not
count) is given up: its future fails with `ToolTimedOut` and its thread is abandoned, no longer counted against
``size`` (a queued call gets a new thread at once) and ending when the tool returns. So a hung tool never holds a
place a ready one needs for longer than its timeout. Idle threads end after `IDLE_S`. One pool per size, shared
by every client (`tool_pool`)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any

__all__ = ["IDLE_S", "ToolPool", "ToolTimedOut", "tool_pool"]

IDLE_S = 30.0
"""An idle thread ends after this many seconds."""


class ToolTimedOut(Exception):
    """A call ran past its timeout and was abandoned (the tool's own ``TimeoutError`` is its failure, not this)."""


class _Task:
    __slots__ = ("abandoned", "fn", "future", "timeout")

    def __init__(self, fn: Callable[[], object], timeout: float | None) -> None:
        self.fn: Callable[[], object] | None = fn
        self.timeout = timeout
        self.future: Future[object] = Future()
        self.abandoned = False


class ToolPool:
    """Runs callables in up to ``size`` threads at once; see the module docstring. ``clock``: monotonic seconds
    for the timeouts (the waits are real)."""

    def __init__(self, size: int, *, idle_s: float = IDLE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.idle_s = idle_s
        self._clock = clock
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # idle threads wait on it for work
        self._watch_cond = threading.Condition(lock)  # the timeout watcher waits on it
        self._queue: deque[_Task] = deque()
        self._deadlines: list[tuple[float, int, _Task]] = []  # a heap of running calls with a timeout
        self._order = itertools.count()
        self._watching = False
        self._idle = 0  # threads waiting for work
        self.counted = 0  # threads that count against ``size`` (alive, not abandoned)
        self.abandoned = 0  # threads still running an abandoned call

    def submit(self, fn: Callable[[], object], timeout: float | None = None) -> Future[Any]:
        """Run ``fn()`` in a pool thread; its result or exception is the future's, or `ToolTimedOut` when it
        runs longer than ``timeout`` seconds."""
        task = _Task(fn, timeout)
        with self._cond:
            self._queue.append(task)
            self._wake_or_start()
        return task.future

    def _wake_or_start(self) -> None:  # holds the lock
        # An idle thread takes one queued call; one notified a moment ago still counts as idle until it runs, so
        # only as many calls as there are idle threads go to them (two calls and one idle thread: start one).
        if self._idle > 0:
            self._cond.notify()
        if self._idle < len(self._queue) and self.counted < self.size:
            self.counted += 1
            threading.Thread(target=self._work, name="holysheep-tool", daemon=True).start()

    def _next(self) -> _Task | None:
        """The next call to run, or None when this thread should end (idle for ``idle_s``)."""
        with self._cond:
            while True:
                while not self._queue:
                    self._idle += 1
                    woke = self._cond.wait(self.idle_s)
                    self._idle -= 1
                    if not woke and not self._queue:
                        self.counted -= 1
                        return None
                task = self._queue.popleft()
                if not task.future.set_running_or_notify_cancel():
                    continue
                if task.timeout is not None:
                    heapq.heappush(self._deadlines, (self._clock() + task.timeout, next(self._order), task))
                    if not self._watching:
                        self._watching = True
                        threading.Thread(target=self._watch, name="holysheep-tool-timeouts", daemon=True).start()
                    else:
                        self._watch_cond.notify()  # the watcher may need to wake sooner
                return task

    def _work(self) -> None:
        while True:
            task = self._next()
            if task is None:
                return
            fn, task.fn = task.fn, None
            assert fn is not None
            try:
                result = fn()
            except BaseException as exc:  # the caller's to see (a tool's failure becomes its outcome there)
                self._settle(task, exc=exc)
            else:
                self._settle(task, result=result)
            del fn
            with self._cond:
                if task.abandoned:  # a thread took its place already: this one ends
                    self.abandoned -= 1
                    return

    @staticmethod
    def _settle(task: _Task, result: object = None, exc: BaseException | None = None) -> None:
        try:
            if exc is not None:
                task.future.set_exception(exc)
            else:
                task.future.set_result(result)
        except InvalidStateError:  # timed out already: the caller has its answer
            pass

    def _watch(self) -> None:
        """Give up each call at its deadline: fail its future, abandon its thread, start one in its place."""
        with self._cond:
            while True:
                while self._deadlines and self._deadlines[0][2].future.done():
                    heapq.heappop(self._deadlines)
                if not self._deadlines:
                    if not self._watch_cond.wait(self.idle_s) and not self._deadlines:
                        self._watching = False
                        return
                    continue
                due, _, task = self._deadlines[0]
                wait = due - self._clock()
                if wait > 0:
                    self._watch_cond.wait(wait)
                    continue
                heapq.heappop(self._deadlines)
                try:
                    task.future.set_exception(ToolTimedOut())
                except InvalidStateError:  # it finished just now
                    continue
                task.abandoned = True
                self.counted -= 1
                self.abandoned += 1
                if self._queue:
                    self._wake_or_start()


_POOLS: dict[int, ToolPool] = {}
_POOLS_LOCK = threading.Lock()


def tool_pool(size: int) -> ToolPool:
    """The process's pool of ``size`` threads (created on first use)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(size)
        if pool is None:
            pool = _POOLS[size] = ToolPool(size)
        return pool

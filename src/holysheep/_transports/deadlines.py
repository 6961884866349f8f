"""Time limits the transports enforce: one attempt's deadline (`Deadline`, `within_deadline` on one shared
timer per event loop) and a stream's idle clock, counted in SSE events (`IdleClock`)."""

from __future__ import annotations

import math
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

__all__ = ["Deadline", "DeadlineTimer", "IdleClock", "ReadBudget", "deadline_error", "within_deadline"]

_T = TypeVar("_T")


class Deadline:
    """A point in time after which an attempt is abandoned (``clock`` is injectable for tests)."""

    __slots__ = ("_clock", "at", "seconds")

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self.at = None if seconds is None else clock() + seconds

    def check(self) -> None:
        """Raise ``httpx.ReadTimeout`` (mapped to `APITimeoutError`, retryable) once the deadline has passed."""
        if self.at is not None and self._clock() > self.at:
            raise deadline_error(self.seconds)


def deadline_error(seconds: float | None) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(f"the attempt took longer than its {seconds:g} s deadline (timeout=)")


class ReadBudget:
    """What is left of an attempt's deadline for a body the caller reads at its own pace
    (``with_streaming_response``): only the time spent waiting on the server counts (the time to the headers,
    then each read), never the caller's own time between reads. ``clock`` is injectable for tests."""

    __slots__ = ("_clock", "_started", "left", "seconds")

    def __init__(self, seconds: float | None, spent: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.left = None if seconds is None else seconds - spent
        self._clock = clock
        self._started = 0.0

    def begin(self) -> float | None:
        """Start a read: the seconds it may take (None: no deadline); ``httpx.ReadTimeout`` when none are left."""
        left = self.left
        if left is not None and left <= 0:
            raise deadline_error(self.seconds)
        self._started = self._clock()
        return left

    def end(self) -> None:
        """A read returned: charge its time; ``httpx.ReadTimeout`` when it went past what was left."""
        if self.left is not None:
            self.left -= self._clock() - self._started
            if self.left < 0:
                raise deadline_error(self.seconds)

    def timed_out(self) -> httpx.ReadTimeout | None:
        """After a read timed out: the deadline's own error when it was the budget that ran out (a socket
        timeout set to what was left may fire a few milliseconds early), None for httpx's per-read timeout."""
        if self.left is None:
            return None
        self.left -= self._clock() - self._started
        return deadline_error(self.seconds) if self.left < 0.005 else None


_PENDING, _DONE, _FIRED = 0, 1, 2


class DeadlineTimer:
    """Every attempt deadline of one event loop on a single loop timer.

    A ``loop.call_later`` per attempt (a ``TimerHandle`` pushed on the loop's heap, then cancelled) costs
    more than the rest of the deadline bookkeeping. Here each deadline is an entry in a FIFO per duration
    (entries of one duration expire in the order they were added), and one timer is armed for the
    earliest head. Finished entries are dropped from the heads at once and compacted away when a slow
    attempt holds a head, so memory follows the attempts in flight.
    """

    __slots__ = ("__weakref__", "_active", "_at", "_handle", "_loop", "_queues", "_time")

    def __init__(self, loop: Any) -> None:
        self._loop = loop
        self._time = loop.time  # the loop's clock (call_at counts in it)
        self._queues: dict[float, deque[list[Any]]] = {}
        self._handle: Any = None
        self._at = math.inf
        self._active = 0

    def add(self, task: object, seconds: float) -> list[object]:
        """Cancel ``task`` after ``seconds`` unless `done` is called first; the entry to pass to `done`."""
        at = self._time() + seconds
        entry = [at, task, _PENDING, seconds]
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = deque()
        queue.append(entry)
        self._active += 1
        if at < self._at:
            self._arm(at)
        return entry

    def done(self, entry: list[Any]) -> bool:
        """Retire an entry; True when its deadline had fired (the task was cancelled by it)."""
        if entry[2] != _PENDING:  # retired already (idempotent), or fired
            return bool(entry[2] == _FIRED)
        entry[2] = _DONE
        self._active -= 1
        queue = self._queues.get(entry[3])
        if queue is not None:
            while queue and queue[0][2] != _PENDING:
                queue.popleft()
            if len(queue) > 4 * self._active + 64:  # a slow head holds finished entries behind it
                self._queues[entry[3]] = deque(e for e in queue if e[2] == _PENDING)
        return False

    def _arm(self, at: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._at = at
        self._handle = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._at = math.inf
        now = self._loop.time()
        earliest = math.inf
        for seconds, queue in list(self._queues.items()):
            while queue and (queue[0][2] != _PENDING or queue[0][0] <= now):
                entry = queue.popleft()
                if entry[2] == _PENDING:
                    entry[2] = _FIRED
                    self._active -= 1
                    entry[1].cancel()
            if queue:
                earliest = min(earliest, queue[0][0])
            else:
                del self._queues[seconds]
        if earliest < math.inf:
            self._arm(earliest)


_timer_of: tuple[Any, DeadlineTimer | None] = (None, None)  # (weakref to the last loop, its timer)
_timers: weakref.WeakKeyDictionary[Any, DeadlineTimer] = weakref.WeakKeyDictionary()


def _deadline_timer(loop: object) -> DeadlineTimer:
    global _timer_of
    ref, timer = _timer_of
    if timer is not None and ref() is loop:
        return timer
    timer = _timers.get(loop)
    if timer is None:
        timer = _timers[loop] = DeadlineTimer(loop)
    _timer_of = (weakref.ref(loop), timer)
    return timer


async def within_deadline(awaitable: Awaitable[_T], seconds: float | None, shown: float | None = None) -> _T:
    """Await ``awaitable``, abandoning it (cancelled, connection closed) after ``seconds``.

    Expiry raises ``httpx.ReadTimeout``, which the shells map to a retryable `APITimeoutError`; its message
    names ``shown`` (the whole deadline, when ``seconds`` is what is left of it) or ``seconds``.
    """
    if seconds is None:
        return await awaitable
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    assert task is not None
    timer = _deadline_timer(loop)
    entry = timer.add(task, seconds)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if not timer.done(entry):
            raise
        uncancel = getattr(task, "uncancel", None)
        if uncancel is not None:
            uncancel()
        raise deadline_error(seconds if shown is None else shown) from None
    finally:
        timer.done(entry)


class IdleClock:
    """``stream_idle_timeout`` counted in a stream's progress (chunks carrying output, a finish reason or usage):
    bytes that complete no event (comment lines, keep-alive padding, an endless line) and keep-alive events that
    carry nothing (``choices: []``) do not reset it."""

    __slots__ = ("_clock", "idle", "last", "seen")

    def __init__(self, idle: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self._clock = clock
        self.last = clock()
        self.seen = 0

    def expired(self, events: int) -> bool:
        """True when nothing new arrived for longer than ``idle`` seconds (``events`` is the running count)."""
        now = self._clock()
        if events != self.seen:
            self.seen = events
            self.last = now
            return False
        return now - self.last > self.idle


# --- transport helpers: used by the httpx shells and the aiohttp backend ---------------------------------

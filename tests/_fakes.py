"""Fakes shared by several test folders: a clock tests drive exactly, a recording Sender, a timed cache store.

``FakeClock`` is every fake clock of the suite: the client's clock (``client._use_clock(clock)``), moved by
the test, a respx reply or a ``ClockedParts`` body (``advance``), and the batch engine's (``clock=clock,
sleep=clock.sleep``), moved only when something sleeps on it. ``RecordingSender`` wraps a client's
``Sender`` and records each attempt at the clock's time the engine handed it over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from holysheep._core.call import Call, Outcome
from holysheep._exceptions import APIStatusError
from holysheep.cache import MemoryCache

__all__ = ["FakeClock", "RecordingSender", "Sent", "TimedStore"]


class FakeClock:
    """Monotonic seconds that move only when a test ``advance``s them or something ``sleep``s on them (each
    sleep is recorded, rounded to 1e-9, and yields to the loop once). Advance by binary fractions (0.25,
    0.125, ...) and sums and differences stay exact floats."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds
        await asyncio.sleep(0)


@dataclass(eq=False)
class Sent:
    """One attempt as the engine handed it to the sender: the clock's time, the body (a shallow copy), and
    the reply's status (200, an HTTP error's status, or None for an error without one). Compared by
    identity: a test finds one attempt in ``sent`` by ``index``."""

    at: float
    body: dict[str, Any]
    status: int | None = None


_SentT = TypeVar("_SentT", bound=Sent)


class RecordingSender(Generic[_SentT]):
    """The client's Sender, recording every attempt into ``sent`` at the moment the engine hands it over
    (``record(clock.now, body)``), its status once back, then ``on_outcome(sent, outcome)`` if given."""

    def __init__(self, inner: Any, clock: FakeClock, *, record: Callable[[float, dict[str, Any]], _SentT],
                 sent: list[_SentT] | None = None,
                 on_outcome: Callable[[_SentT, Outcome], None] | None = None) -> None:
        self._inner, self._clock, self._record, self._on_outcome = inner, clock, record, on_outcome
        self.sent: list[_SentT] = [] if sent is None else sent

    def __getattr__(self, name: str) -> Any:  # plan, limits_key, quota, reserve, hooks, aclose
        return getattr(self._inner, name)

    async def attempt(self, call: Call) -> Outcome:
        sent = self._record(self._clock.now, dict(call.spec.body or {}))
        self.sent.append(sent)
        outcome: Outcome = await self._inner.attempt(call)
        error = outcome.error
        sent.status = error.status_code if isinstance(error, APIStatusError) else 200 if error is None else None
        if self._on_outcome is not None:
            self._on_outcome(sent, outcome)
        return outcome


class TimedStore(MemoryCache):
    """A response-cache store whose every lookup takes ``seconds`` (0.125) on ``clock``."""

    def __init__(self, clock: FakeClock, seconds: float = 0.125) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def get(self, key: str) -> bytes | None:
        self.clock.advance(self.seconds)
        return super().get(key)


def sleep_once_counted(clock: FakeClock, sent: list[Any],
                       answered: Callable[[], int]) -> Callable[[float], Awaitable[None]]:
    """An engine ``sleep`` on ``clock`` that first waits (real time, at most 30 s) until the server has answered
    (``answered()``) every request the engines handed over (``sent``). A request takes real time to reach a
    server's thread; a fake clock moved on meanwhile would have it counted late, with later ones, by a server
    limiter on the same clock (whose bucket, full meanwhile, loses the refill)."""
    async def sleep(seconds: float) -> None:
        deadline = time.monotonic() + 30.0
        while answered() < len(sent):
            assert time.monotonic() < deadline, "the server never saw a request an engine sent"
            await asyncio.sleep(0.0005)
        await clock.sleep(seconds)

    return sleep

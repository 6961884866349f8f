"""`DeadlineTimer`: every attempt deadline of a loop on one timer, driven here by a fake loop clock."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from holysheep._transports.deadlines import DeadlineTimer, within_deadline


class FakeLoop:
    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Any]] = []  # (at, callback), armed and not cancelled

    def time(self) -> float:
        return self.now

    def call_at(self, at: float, callback: Any) -> Any:
        item = (at, callback)
        self.timers.append(item)
        loop = self

        class Handle:
            def cancel(self) -> None:
                if item in loop.timers:
                    loop.timers.remove(item)

        return Handle()

    def advance(self, to: float) -> None:
        self.now = to
        for item in sorted(t for t in self.timers if t[0] <= to):
            if item in self.timers:
                self.timers.remove(item)
                item[1]()


class FakeTask:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def cancel(self) -> None:
        self.log.append(self.name)


def test_deadlines_of_mixed_durations_fire_in_time_order_on_one_timer() -> None:
    loop, log = FakeLoop(), []
    timer = DeadlineTimer(loop)
    a = timer.add(FakeTask("a@10", log), 10.0)
    timer.add(FakeTask("b@3", log), 3.0)
    loop.now = 1.0
    timer.add(FakeTask("c@11", log), 10.0)
    timer.add(FakeTask("d@4", log), 3.0)
    assert [at for at, _ in loop.timers] == [3.0]  # one armed timer: the earliest deadline
    loop.advance(3.0)
    assert log == ["b@3"]
    assert [at for at, _ in loop.timers] == [4.0]
    loop.advance(4.0)
    assert log == ["b@3", "d@4"]
    assert timer.done(a) is False  # finished before its deadline: never cancelled
    loop.advance(10.5)
    assert log == ["b@3", "d@4"]
    loop.advance(11.0)
    assert log == ["b@3", "d@4", "c@11"]
    assert loop.timers == []


def test_done_is_idempotent_and_reports_a_fired_deadline() -> None:
    loop, log = FakeLoop(), []
    timer = DeadlineTimer(loop)
    entry = timer.add(FakeTask("t", log), 1.0)
    loop.advance(1.0)
    assert log == ["t"]
    assert timer.done(entry) is True
    assert timer.done(entry) is True
    other = timer.add(FakeTask("u", log), 1.0)
    assert timer.done(other) is False
    assert timer.done(other) is False
    assert timer._active == 0


def test_finished_entries_do_not_pile_up_behind_a_slow_attempt() -> None:
    loop, log = FakeLoop(), []
    timer = DeadlineTimer(loop)
    slow = timer.add(FakeTask("slow", log), 600.0)  # holds the head of the 600 s queue
    for i in range(10_000):
        loop.now = i * 0.001
        timer.done(timer.add(FakeTask(str(i), log), 600.0))
    assert len(timer._queues[600.0]) <= 4 * 1 + 64 + 1
    assert timer.done(slow) is False
    assert log == []


def test_within_deadline_raises_read_timeout_and_leaves_the_task_usable() -> None:
    async def main() -> list[str]:
        seen = []
        with pytest.raises(httpx.ReadTimeout, match=r"0\.05 s deadline"):
            await within_deadline(asyncio.sleep(5), 0.05)
        seen.append("timed out")
        assert await within_deadline(asyncio.sleep(0, "fast"), 5.0) == "fast"
        await asyncio.sleep(0)  # the task was uncancelled: it goes on normally
        seen.append("still running")
        with pytest.raises(asyncio.CancelledError):  # an outside cancel stays a cancel
            task = asyncio.current_task()
            assert task is not None
            asyncio.get_running_loop().call_soon(task.cancel)
            await within_deadline(asyncio.sleep(5), 5.0)
        return seen

    assert asyncio.run(main()) == ["timed out", "still running"]

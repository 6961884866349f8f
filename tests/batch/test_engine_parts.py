"""The batch engine's parts on their own, with a fake clock: exact schedules, no server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep.batch._admission import Admission
from holysheep.batch._options import BatchOptions
from holysheep.batch._results import BatchStats
from holysheep.batch._server_limits import LEARNED_SHARE
from holysheep.batch._work_queue import WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds
        await asyncio.sleep(0)


def admission(**options: Any) -> tuple[Admission, FakeClock]:
    clock = FakeClock()
    return Admission(BatchOptions(**options), clock=clock, sleep=clock.sleep), clock


LIMITS = {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "3",
          "x-ratelimit-limit-tokens": "60000", "x-ratelimit-remaining-tokens": "59000"}


async def test_fixed_rpm_admits_a_one_second_burst_then_paces() -> None:
    adm, clock = admission(rpm=120, tpm=None, concurrency=100)
    times = []
    for _ in range(5):
        assert await adm.admit(10) == 0  # no TPM bucket: nothing charged
        times.append(round(clock.now, 9))
    assert times == [0.0, 0.0, 0.5, 1.0, 1.5]  # 2/s: a burst of 2, then one every 0.5 s
    assert adm.limiter.in_flight == 5


async def test_learned_limits_start_at_what_remains_and_pace_at_the_share() -> None:
    adm, clock = admission(concurrency=100)
    assert adm.probing and adm.rpm is None and adm.tpm is None
    adm.learn(LIMITS)
    adm.probe_done()
    assert not adm.probing
    assert adm.learned_rpm == 600 and adm.learned_tpm == 60000
    assert adm.rpm is not None and adm.rpm.rate == 600 * LEARNED_SHARE / 60
    assert adm.rpm.level == pytest.approx(1.96)  # a 0.2 s burst at 9.8/s (under the 3 that remain)
    for _ in range(3):
        await adm.admit(1)
    assert clock.now == pytest.approx((3 - 1.96) / 9.8)  # the rest of the third came at 9.8/s


async def test_a_new_announced_limit_replaces_the_bucket_and_stats_show_it() -> None:
    adm, _ = admission()
    adm.learn(LIMITS)
    first = adm.rpm
    adm.learn({**LIMITS, "x-ratelimit-remaining-requests": "1"})  # same limit: the bucket stays
    assert adm.rpm is first
    adm.learn({**LIMITS, "x-ratelimit-limit-requests": "1200"})
    assert adm.rpm is not first and adm.learned_rpm == 1200
    stats = BatchStats()
    adm.fill(stats)
    assert (stats.learned_rpm, stats.learned_tpm) == (1200, 60000)


async def test_fixed_limits_ignore_the_server_headers() -> None:
    adm, _ = admission(rpm=60, tpm=None)
    bucket = adm.rpm
    adm.learn(LIMITS)
    assert adm.rpm is bucket and adm.learned_rpm is None and not adm.probing


async def test_tpm_charge_is_settled_by_actual_usage_and_refunded_on_failure() -> None:
    adm, _ = admission(rpm=None, tpm=6000)  # 100 tokens/s, capacity 100
    charge = await adm.admit(80)
    assert charge == 80 and adm.tpm is not None and adm.tpm.level == 20
    adm.settle_tokens(charge, 30)  # used 30: 50 come back
    assert adm.tpm.level == 70
    adm.settle_tokens(await adm.admit(40), 0)  # usage unknown: the charge stays
    assert adm.tpm.level == 30
    adm.refund_tokens(25)
    assert adm.tpm.level == 55


async def test_work_queue_serves_retries_first_and_bounds_the_read_ahead() -> None:
    queue = WorkQueue((f"p{i}" for i in range(10)), {"model": "m"}, read_ahead=3)
    a, b, c = [await queue.next() for _ in range(3)]
    assert [x.index for x in (a, b, c) if x is not None] == [0, 1, 2]
    assert queue.read_count == 3 and queue.in_memory == 3
    waiter = asyncio.ensure_future(queue.next())
    await asyncio.sleep(0)
    assert not waiter.done()  # read-ahead full: no fourth read until a result is taken
    assert b is not None
    queue.retry_now(b)
    assert (await waiter) is b  # a retry goes ahead, read-ahead or not
    queue.item_finished()
    queue.result_taken()
    d = await queue.next()
    assert d is not None and d.index == 3 and d.params["model"] == "m"


async def test_work_queue_backoff_ends_early_when_the_batch_stops() -> None:
    queue = WorkQueue(["x"], {"model": "m"}, read_ahead=8)
    item = await queue.next()
    assert item is not None
    queue.retry_later(item, 3600.0)
    waiter = asyncio.ensure_future(queue.next())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.end_backoffs()
    assert (await asyncio.wait_for(waiter, 1)) is item


async def test_work_queue_ends_once_every_item_finished() -> None:
    queue = WorkQueue(["x", "y"], {"model": "m"}, read_ahead=8)
    first, second = await queue.next(), await queue.next()
    assert first is not None and second is not None
    waiter = asyncio.ensure_future(queue.next())
    await asyncio.sleep(0)
    queue.item_finished()
    await asyncio.sleep(0)
    assert not waiter.done()  # one item is still unfinished (it may come back as a retry)
    queue.item_finished()
    assert (await asyncio.wait_for(waiter, 1)) is None

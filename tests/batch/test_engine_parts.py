"""The batch engine's parts on their own, with a fake clock: exact schedules, no server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep._engine.admission import Admission
from holysheep._engine.options import BatchOptions
from holysheep._engine.results import BatchStats
from holysheep._engine.server_limits import LEARNED_SHARE
from holysheep._engine.work_queue import WorkQueue

from .conftest import FakeClock


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
    """The first reply's remaining is a burst spent at once (issue 37), then the pace is the share."""
    adm, clock = admission(concurrency=100)
    assert adm.probing and adm.rpm is None and adm.tpm is None
    adm.learn(LIMITS)
    assert not adm.probing
    assert adm.learned_rpm == 600 and adm.learned_tpm == 60000
    assert adm.rpm is not None and adm.rpm.rate == 600 * LEARNED_SHARE / 60
    assert adm.rpm.level == 3  # the 3 that remain: the announced burst, above the 0.2 s burst at 9.8/s
    for _ in range(3):
        await adm.admit(1)
    assert clock.now == 0  # spent at once
    await adm.admit(1)
    assert clock.now == pytest.approx(1 / 9.8)  # then the refill paces


async def test_a_new_announced_limit_retunes_the_bucket_and_stats_show_it() -> None:
    adm, _ = admission()
    adm.learn(LIMITS)
    first = adm.rpm
    assert first is not None
    adm.learn({**LIMITS, "x-ratelimit-remaining-requests": "1"})  # same limit: the bucket stays
    assert adm.rpm is first
    await adm.admit(1)
    level = first.level
    adm.learn({**LIMITS, "x-ratelimit-limit-requests": "1200"})  # a new rate, the same level: no refill
    assert adm.rpm is first and first.rate == 1200 * LEARNED_SHARE / 60 and first.level == pytest.approx(level)
    assert adm.learned_rpm == 1200
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


class _Breaking:
    """A sender over a real one that raises (not answers) for chosen prompts: in plan(), or in attempt()."""

    def __init__(self, inner: Any, plan_fails: str, attempt_fails: str) -> None:
        self._inner, self._plan_fails, self._attempt_fails = inner, plan_fails, attempt_fails

    def plan(self, params: Any, *, idempotency_key: str | None = None) -> Any:
        if params["messages"][0]["content"] == self._plan_fails:
            raise RuntimeError("plan broke")
        return self._inner.plan(params, idempotency_key=idempotency_key)

    async def attempt(self, call: Any) -> Any:
        if call.spec.body["messages"][0]["content"] == self._attempt_fails:
            raise RuntimeError("attempt broke")
        return await self._inner.attempt(call)

    async def quota(self) -> Any:
        return await self._inner.quota()

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_an_item_whose_sender_raises_ends_with_that_error_and_the_batch_goes_on() -> None:
    from holysheep import AsyncClient
    from holysheep._engine.iterator import BatchIterator
    from holysheep.testing import FakeServer

    with FakeServer() as server:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            sender = _Breaking(client.sender(), plan_fails="p1", attempt_fails="p3")
            it = BatchIterator(sender, [f"p{i}" for i in range(6)], defaults={"model": "m"},
                               options=BatchOptions(check_quota=False))
            results = sorted([r async for r in asyncio_timeout(it)], key=lambda r: r.index)
    assert [r.ok for r in results] == [True, False, True, False, True, True]
    assert str(results[1].error) == "plan broke" and str(results[3].error) == "attempt broke"
    assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 4


async def asyncio_timeout(it: Any) -> Any:
    async def collect() -> list[Any]:
        return [r async for r in it]

    for result in await asyncio.wait_for(collect(), 10):  # a hang fails the test instead of stalling it
        yield result


async def test_work_queue_wakes_one_worker_per_item_and_all_at_the_end() -> None:
    queue = WorkQueue(["x"], {"model": "m"}, read_ahead=8)
    item = await queue.next()
    assert item is not None
    waiters = [asyncio.ensure_future(queue.next()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.retry_now(item)  # one item: one worker gets it, the others keep waiting
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [w.done() for w in waiters].count(True) == 1
    assert next(w for w in waiters if w.done()).result() is item
    queue.item_finished()  # the last item finished: every waiting worker ends
    rest = [w for w in waiters if not w.done()]
    assert await asyncio.wait_for(asyncio.gather(*rest), 1) == [None, None]


async def test_an_async_input_is_read_by_one_worker_at_a_time() -> None:
    reading = 0
    overlaps = []

    async def source() -> Any:
        nonlocal reading
        for i in range(6):
            reading += 1
            overlaps.append(reading)
            await asyncio.sleep(0.001)
            reading -= 1
            yield f"p{i}"

    queue = WorkQueue(source(), {"model": "m"}, read_ahead=16)
    items = await asyncio.wait_for(asyncio.gather(*(queue.next() for _ in range(6))), 5)
    assert sorted(x.index for x in items if x is not None) == list(range(6))
    assert max(overlaps) == 1  # never two anext() at once (an async generator refuses that)


def test_limits_memory_keeps_entries_for_their_ttl() -> None:
    from holysheep._engine.server_limits import LimitsMemory, read_limits

    clock = FakeClock()
    memory = LimitsMemory(ttl_s=600, size=2, clock=clock)
    limits = read_limits(LIMITS)
    memory.remember("a", limits)
    memory.remember("b", None)  # the server announced no limits: also worth remembering
    assert memory.recall("a") == (True, limits) and memory.recall("b") == (True, None)
    assert memory.recall("c") == (False, None)
    clock.now = 600.5
    assert memory.recall("a") == (False, None)  # stale: probe again
    memory.remember("c", None)  # the oldest entry makes room
    assert memory.recall("c") == (True, None) and "a" not in memory._entries


async def test_a_later_batch_reuses_the_limits() -> None:
    from holysheep import AsyncClient
    from holysheep.testing import FakeServer

    with FakeServer(rpm_limit=6000, latency=0.2) as server:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            first = await client.chat.completions.batch(["a", "b", "c"], model="m", check_quota=False)
            mark = len(server.requests)
            second = await client.chat.completions.batch(["d", "e", "f"], model="m", check_quota=False)
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    one, two = chats[:3], [r for r in server.requests[mark:] if r.path.endswith("/chat/completions")]
    assert all(r.finished_at is not None for r in chats)
    assert all(r.started_at < one[0].finished_at for r in one[1:])  # type: ignore[operator]  # went together
    assert all(r.started_at < two[0].finished_at for r in two[1:])  # type: ignore[operator]  # (no probe, #45)
    assert first.stats.learned_rpm == second.stats.learned_rpm == 6000


async def test_admit_now_takes_the_usual_case_without_waiting_and_never_jumps_the_queue() -> None:
    adm, clock = admission(rpm=120, tpm=None, concurrency=3)  # 2/s: a burst of 2
    assert adm.admit_now(5) == 0 and adm.admit_now(5) == 0
    assert adm.admit_now(5) is None  # the RPM bucket is empty: nothing taken, the slot given back
    assert adm.limiter.in_flight == 2 and adm.rpm is not None and adm.rpm.level == pytest.approx(0)
    waiter = asyncio.ensure_future(adm.admit(5))  # waits for the bucket
    await asyncio.sleep(0)
    clock.now = 10.0  # the bucket refills, but the waiter is first in line
    assert adm.admit_now(5) is None
    assert await waiter == 0 and adm.limiter.in_flight == 3
    assert adm.admit_now(5) is None  # every slot taken
    adm.release()
    adm.gate.pause_for(1.0)
    assert adm.admit_now(5) is None  # paused
    clock.now = 11.5
    assert adm.admit_now(5) == 0 and adm.limiter.in_flight == 3


async def test_admit_now_charges_tpm_only_when_it_fits() -> None:
    adm, _ = admission(rpm=None, tpm=6000)  # 100 tokens/s, capacity 100
    asked: list[int] = []

    def estimate() -> int:
        asked.append(1)
        return 80

    assert adm.admit_now(estimate) == 80 and adm.tpm is not None and adm.tpm.level == 20
    assert adm.admit_now(estimate) is None and adm.tpm.level == 20 and adm.limiter.in_flight == 1
    assert len(asked) == 2
    no_tpm, _ = admission(rpm=None, tpm=None)
    assert no_tpm.admit_now(estimate) == 0 and len(asked) == 2  # no TPM bucket: the estimate is never worked out


async def test_next_now_hands_out_retries_and_plain_inputs_without_waiting() -> None:
    from holysheep._engine.work_queue import WAIT

    q = WorkQueue(iter(["a", "b"]), {"model": "m"}, read_ahead=1)
    first = q.next_now()
    assert first is not WAIT and first is not None and first.index == 0
    assert q.next_now() is WAIT  # the read-ahead (1) is full until the consumer takes a result
    q.retry_now(first)
    assert q.next_now() is first  # a retry goes first, read-ahead or not
    q.result_taken()
    second = q.next_now()
    assert second is not None and second is not WAIT and second.index == 1
    q.item_finished()
    q.item_finished()
    q.result_taken()
    assert q.next_now() is None  # the input is over and every item finished

    async def gen() -> Any:
        yield "x"

    aq = WorkQueue(gen(), {"model": "m"}, read_ahead=4)
    assert aq.next_now() is WAIT  # an async input is read by awaiting next()
    item = await aq.next()
    assert item is not None and item.index == 0


async def test_result_channel_is_fifo_and_wakes_getters_in_order() -> None:
    from holysheep._engine.delivery import EMPTY, ResultChannel

    channel = ResultChannel()
    assert channel.get_nowait() is EMPTY
    for n in (1, 2, 3):
        channel.put_nowait(n)
    assert len(channel) == 3
    assert [channel.get_nowait(), await channel.get(), channel.get_nowait()] == [1, 2, 3]

    got: list[tuple[str, int]] = []

    async def getter(name: str) -> None:
        got.append((name, await channel.get()))

    first = asyncio.create_task(getter("first"))
    second = asyncio.create_task(getter("second"))
    await asyncio.sleep(0)  # both wait, first in line first
    channel.put_nowait(10)
    channel.put_nowait(11)
    await asyncio.gather(first, second)
    assert got == [("first", 10), ("second", 11)]
    assert channel.get_nowait() is EMPTY


async def test_result_channel_skips_a_cancelled_getter_and_loses_nothing() -> None:
    from holysheep._engine.delivery import ResultChannel

    channel = ResultChannel()
    gone = asyncio.create_task(channel.get())
    waiting = asyncio.create_task(channel.get())
    await asyncio.sleep(0)
    gone.cancel()  # cancelled before anything arrived
    await asyncio.sleep(0)
    channel.put_nowait("a")
    assert await waiting == "a"

    # Woken, then cancelled before it ran: its item is handed to the next getter, not dropped.
    woken = asyncio.create_task(channel.get())
    after = asyncio.create_task(channel.get())
    await asyncio.sleep(0)
    channel.put_nowait("b")
    woken.cancel()
    with pytest.raises(asyncio.CancelledError):
        await woken
    assert await asyncio.wait_for(after, 5) == "b"
    assert gone.cancelled() and len(channel) == 0

"""The batch engine against a real local server: order, accounting, bounds, rate limits, stops, cancellation."""

from __future__ import annotations

import _thread
import asyncio
import io
import itertools
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from holysheep import InvalidRequestError
from holysheep.batch import (
    BatchCancelledError,
    BatchInterrupted,
    BatchStats,
    PlainProgress,
)
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL, ClockedEngine, FakeClock, async_client, chat_requests, sync_client


def _content(result: Any) -> str:
    return str(result.response.choices[0].message.content)


async def test_order_and_exactly_one_result_under_faults() -> None:
    mix = {Fault.status(429, retry_after=0.02): 2.0, Fault.status(500): 1.0, Fault.status(503): 1.0,
           Fault.reset(): 1.0}
    with FakeServer(latency=0.005, fault_rate=0.2, fault_mix=mix, seed=7) as server:
        async with async_client(server, initial_retry_delay=0.005, max_retry_delay=0.02) as client:
            prompts = [f"prompt number {i}" for i in range(120)]
            results = await client.chat.completions.batch(
                prompts, model=MODEL, concurrency=12, retry_budget=None, max_retries=8)
    assert len(results) == 120
    assert [r.index for r in results] == list(range(120))
    assert all(r.ok for r in results), results.summary()
    assert [_content(r) for r in results] == prompts  # the echo server answers each prompt with itself
    summary = results.summary()
    faulted = sum(1 for r in server.requests if r.fault is not None)
    assert faulted > 10 and summary.retries == faulted
    assert summary.requests == 120 + faulted == len(chat_requests(server))
    assert sum(r.attempts for r in results) == summary.requests
    assert summary.rate_limited > 0 and summary.pauses > 0


async def test_never_more_than_concurrency_in_flight_server_side() -> None:
    with FakeServer(latency=0.02) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"p{i}" for i in range(200)], model=MODEL,
                                                          concurrency=16)
    assert len(results.responses) == 200
    assert server.max_in_flight <= 16  # never more; the client side reaches exactly 16
    assert results.summary().peak_in_flight == 16


def test_sync_batch_in_script_keeps_bound_and_order(server: FakeServer) -> None:
    with sync_client(server) as client:
        results = client.chat.completions.batch([f"s{i}" for i in range(60)], model=MODEL, concurrency=5)
    assert [_content(r) for r in results] == [f"s{i}" for i in range(60)]
    assert server.max_in_flight <= 5 and results.summary().peak_in_flight == 5


async def test_sync_batch_inside_running_loop(server: FakeServer) -> None:
    asyncio.get_running_loop()  # this test body runs inside a loop, as a Jupyter cell does
    with sync_client(server) as client:
        results = client.chat.completions.batch(["a", "b", "c"], model=MODEL, concurrency=2)
    assert [_content(r) for r in results] == ["a", "b", "c"]


def test_sync_batch_over_a_custom_http_client_uses_threads(server: FakeServer) -> None:
    seen: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda req: seen.append(req.url.path)]})
    with http, sync_client(server, http_client=http) as client:
        results = client.chat.completions.batch([f"t{i}" for i in range(20)], model=MODEL, concurrency=4)
    assert len(results.responses) == 20
    assert seen.count("/v1/chat/completions") == 20  # every request went through the given transport
    assert server.max_in_flight <= 4


async def test_batch_iter_is_lazy_over_an_endless_iterable(server: FakeServer) -> None:
    produced = 0

    def endless() -> Any:
        nonlocal produced
        for i in itertools.count():
            produced += 1
            yield f"n{i}"

    got = []
    async with async_client(server) as client, \
            client.chat.completions.batch_iter(endless(), model=MODEL, concurrency=4) as it:
        async for result in it:
            got.append(result)
            if len(got) == 50:
                break
    assert len(got) == 50 and len({r.index for r in got}) == 50
    assert all(_content(r) == f"n{r.index}" for r in got)
    assert produced <= 50 + 128  # bounded read-ahead (default max(2*concurrency+64, 128))


async def test_batch_iter_takes_an_async_iterable_and_yields_each_index_once(server: FakeServer) -> None:
    async def source() -> AsyncIterator[dict[str, Any]]:
        for i in range(25):
            await asyncio.sleep(0)
            yield {"custom_id": f"id-{i}", "messages": [{"role": "user", "content": f"x{i}"}]}

    async with async_client(server) as client:
        results = [r async for r in client.chat.completions.batch_iter(source(), model=MODEL, concurrency=6)]
    assert sorted(r.index for r in results) == list(range(25))
    assert {r.custom_id for r in results} == {f"id-{i}" for i in range(25)}


async def test_rpm_limit_paces_the_dispatch_on_an_exact_schedule() -> None:
    """The RPM bucket runs on an injected clock: 600 RPM = a 10-request burst, then one every 0.1 s."""
    from holysheep._engine.limits import TokenBucket

    clock = FakeClock()
    sent: list[float] = []
    with FakeServer() as server:
        async with async_client(server) as client:
            it = client.chat.completions.batch_iter([f"r{i}" for i in range(30)], model=MODEL, concurrency=32,
                                                    rpm=600, check_quota=False)
            it.admission.rpm = TokenBucket.per_minute(600, clock=clock, sleep=clock.sleep)
            take, take_now = it.admission.rpm.take, it.admission.rpm.take_now

            async def recorded(amount: float) -> None:
                await take(amount)
                sent.append(round(clock.now, 6))

            def recorded_now(amount: float) -> bool:  # the burst is admitted without an await
                if taken := take_now(amount):
                    sent.append(round(clock.now, 6))
                return taken

            it.admission.rpm.take = recorded  # type: ignore[method-assign]
            it.admission.rpm.take_now = recorded_now  # type: ignore[method-assign]
            results = [r async for r in it]
    assert len(results) == 30 and all(r.ok for r in results)
    assert sent == [0.0] * 10 + [round(0.1 * k, 6) for k in range(1, 21)]
    assert len(chat_requests(server)) == 30


async def test_tpm_estimate_is_corrected_by_actual_usage(server: FakeServer, engine_clock: ClockedEngine) -> None:
    """Each request is estimated at 1,002 tokens (max_tokens=1000) but uses a few: at 60,000 TPM (1,000 per
    second, a burst of 1,000) the uncorrected charges would make 39 of the 40 requests wait ~1 s each on the
    bucket. The batch starts at full concurrency (#45), so only requests admitted before the first reply came
    back are charged 1,002 (at most the first 8: the first goes, the others wait ~1 s each on the engine's
    clock); from then on the estimator's factor sits at its floor (0.05: 50 tokens) and each reply gives back
    what its request did not use. So at most 7 bucket waits, and the bucket was charged exactly the tokens the
    replies reported."""
    async with async_client(server) as client:
        results = await client.chat.completions.batch([f"t{i}" for i in range(40)], model=MODEL, concurrency=8,
                                                      tpm=60_000, max_tokens=1000)
    assert len(results.responses) == 40
    clock, (it,) = engine_clock.clock, engine_clock.iterators
    # the first wave's 7 waits, and a few more when later slots are taken before the first replies' usage was
    # observed (real threads answer the fake-clocked engine, so which comes first varies); uncorrected, 39
    assert len(clock.sleeps) <= 20 and all(0 < s <= 1.011 for s in clock.sleeps), clock.sleeps
    assert [s.status for s in engine_clock.sent] == [200] * 40 and len(chat_requests(server)) == 40
    estimator, bucket = it.admission.estimator, it.admission.tpm
    assert (estimator.samples, estimator.factor) == (40, 0.05)
    assert estimator.estimate(1002) == 50  # each request after the first reply was charged 50, not 1,002
    used = sum(r.response.usage.total_tokens for r in results)
    assert results.summary().total_tokens == used
    # what was charged came back but the use: the bucket is short at most the tokens the replies reported (less
    # whatever the engine's clock refilled since the last reply, which depends on when that reply came)
    assert bucket is not None and 1000 - used <= bucket.level <= 1000


async def test_429_pauses_the_whole_batch_and_aimd_shows_in_summary(engine_clock: ClockedEngine) -> None:
    """The batch starts at full concurrency (8 at t=0, no probe: #45); one of them gets a 429 with
    Retry-After: 0.3. On the engine's clock the whole batch waits exactly 0.3 s (the pause gate's naps): nothing
    more goes out before, and the retry and the 22 others go out at t=0.3; the concurrency halves once (8 -> 4)
    and the summary says so. The first wave's 7 others are answered 0.3 s (real time) after the 429, so the engine
    sees the 429 first, as the schedule assumes (real server threads answer a fake-clocked engine: with immediate
    replies a 200 read before the 429 freed a slot at t=0, 1 run in 4 on a loaded machine)."""
    with FakeServer(faults=[Fault.status(429, retry_after=0.3)] + [Fault.stall(0.3)] * 7) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"w{i}" for i in range(30)], model=MODEL,
                                                          concurrency=8, check_quota=False)
    assert all(r.ok for r in results)
    sent, clock = engine_clock.sent, engine_clock.clock
    assert [r.status for r in chat_requests(server)].count(429) == 1 and len(chat_requests(server)) == 31
    first, after = sent[:8], sent[8:]
    assert [s.at for s in first] == [0.0] * 8 and sorted(s.status or 0 for s in first) == [200] * 7 + [429]
    assert [s.at for s in after] == pytest.approx([0.3] * 23, abs=1e-9)  # nobody went out during the pause
    assert [s.status for s in after] == [200] * 23
    assert sorted(s.body["messages"][0]["content"] for s in sent if s.status == 200) == sorted(
        f"w{i}" for i in range(30))
    assert sum(clock.sleeps) == pytest.approx(0.3, abs=1e-9) and max(clock.sleeps) <= 0.1  # the gate's naps
    assert sorted(r.attempts for r in results) == [1] * 29 + [2]
    s = results.summary()
    assert (s.rate_limited, s.retries, s.concurrency_decreases, s.concurrency_min) == (1, 1, 1, 4)
    assert (s.pauses, s.paused_s) == (1, 0.3)
    assert "(concurrency 8, lowered to 4 after rate limits)" in str(s) and "paused 1 time (0.3 s)" in str(s)


async def test_bad_items_fail_alone(server: FakeServer) -> None:
    async with async_client(server) as client:
        results = await client.chat.completions.batch(
            ["fine", 42, {"messages": []}, {"custom_id": "c", "prompt": "ok"}], model=MODEL)
    assert [r.ok for r in results] == [True, False, False, True]
    assert isinstance(results[1].error, InvalidRequestError) and results[1].attempts == 0
    assert isinstance(results[2].error, InvalidRequestError)
    assert results[3].custom_id == "c"
    assert len(chat_requests(server)) == 2


async def test_cost_and_tokens_in_the_stats_equal_the_sum_over_responses(server: FakeServer) -> None:
    """The batch prices the token sums per model when its stats are read; that must equal the sum of
    each response's own ``cost`` (prices are linear in tokens), across models and unpriced ones."""
    seen: list[float] = []
    items = [{"model": m, "messages": [{"role": "user", "content": "x" * (7 * i + 1)}]}
             for i, m in enumerate(["gpt-4.1", "deepseek-v3.2", "my-private-model", "gpt-4.1"] * 3)]
    async with async_client(server) as client:
        results = await client.chat.completions.batch(
            items, on_progress=lambda s: seen.append(s.cost_usd), check_quota=False)
    responses = results.responses
    priced = [r.cost for r in responses if r.cost is not None]
    assert len(priced) == 9 and all(c > 0 for c in priced)
    assert results.stats.cost_known and results.stats.cost_usd == pytest.approx(sum(priced), rel=1e-12)
    assert results.stats.prompt_tokens == sum(r.usage.prompt_tokens for r in responses if r.usage)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(sum(priced), rel=1e-12)  # live on every read


async def test_progress_callback_and_plain_bar(server: FakeServer) -> None:
    seen: list[tuple[int, int | None]] = []
    out = io.StringIO()

    def on_progress(stats: BatchStats) -> None:
        seen.append((stats.done, stats.total))

    async with async_client(server) as client:
        await client.chat.completions.batch([f"p{i}" for i in range(15)], model=MODEL, on_progress=on_progress,
                                            progress=PlainProgress(out, interval=0))
    assert len(seen) == 15 and seen[-1] == (15, 15)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("batch: 15/15 done, 0 failed") and "tokens" in last and "$" in last


# Four requests answered, then four that the server never answers (a stall ends only when the client
# hangs up): the moment to cancel is a fixed point of the schedule, not a time.
_FOUR_THEN_FOUR_STALLED = [None] * 4 + [Fault.stall()] * 4


def _four_answered_four_hung_up(server: FakeServer) -> None:
    """The server saw exactly 8 chat requests: 4 answered, then 4 in flight whose client hung up."""
    reqs = chat_requests(server)
    assert [r.status for r in reqs] == [200] * 4 + [None] * 4
    assert [r.fault.kind if r.fault else None for r in reqs] == [None] * 4 + ["stall"] * 4
    assert all(r.finished_at is not None for r in reqs)  # a stall only ends when the connection closes


async def test_async_cancellation_cancels_in_flight_and_keeps_delivered_results() -> None:
    got: list[Any] = []
    four = asyncio.Event()

    def on_result(result: Any) -> None:
        got.append(result)
        if len(got) == 4:
            four.set()

    with FakeServer(faults=_FOUR_THEN_FOUR_STALLED) as server:
        async with async_client(server) as client:
            task = asyncio.create_task(client.chat.completions.batch(
                [f"c{i}" for i in range(100)], model=MODEL, concurrency=4, on_result=on_result, check_quota=False))
            await asyncio.wait_for(four.wait(), 60)
            assert await asyncio.to_thread(server.wait_in_flight, 4, 60)  # the next 4, stalled
            assert len(chat_requests(server)) == 8
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(server.wait_idle, 60)  # the 4 in flight were hung up on
        assert len(got) == 4 and all(r.ok for r in got)  # the delivered results are kept, no more came
        assert sorted(_content(r) for r in got) == sorted(f"c{r.index}" for r in got)
        _four_answered_four_hung_up(server)


def test_sync_ctrl_c_raises_with_partial_results() -> None:
    """Ctrl-C comes once 4 items are done and the next 4 hang at the server: the batch cancels those 4
    (the server sees the hang-ups), its loop thread ends (no grace period spent), and BatchInterrupted
    holds exactly the 4 results and 196 cancelled items."""
    done = threading.Event()
    delivered: list[Any] = []

    def on_result(result: Any) -> None:
        delivered.append(result)
        if len(delivered) == 4:
            done.set()

    with FakeServer(faults=_FOUR_THEN_FOUR_STALLED) as server, sync_client(server) as client:

        def ctrl_c() -> None:
            if done.wait(60) and server.wait_in_flight(4, 60):
                _thread.interrupt_main()

        presser = threading.Thread(target=ctrl_c)
        presser.start()
        with pytest.raises(BatchInterrupted) as info:
            client.chat.completions.batch([f"k{i}" for i in range(200)], model=MODEL, concurrency=4,
                                          on_result=on_result, check_quota=False)
        presser.join()
        # the batch's loop thread ended: it did not wait out its grace period on the hung requests
        assert not [t for t in threading.enumerate() if t.name == "holysheep-batch-loop" and t.is_alive()]
        results = info.value.results
        assert len(results) == 200 and all(r is not None for r in results)
        ok = [r for r in results if r.ok]
        assert len(ok) == 4 and sorted(r.index for r in ok) == sorted(r.index for r in delivered)
        assert all(_content(r) == f"k{r.index}" for r in ok)
        assert all(isinstance(r.error, BatchCancelledError) for r in results if not r.ok)
        assert results.summary().stop_reason == "interrupted (Ctrl-C)"
        assert isinstance(info.value, KeyboardInterrupt)
        assert server.wait_idle(60)
        _four_answered_four_hung_up(server)


async def test_summary_shows_the_limits_the_server_announced() -> None:
    with FakeServer(rpm_limit=6000) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"p{i}" for i in range(5)], model=MODEL,
                                                          check_quota=False)
    s = results.summary()
    assert (s.learned_rpm, s.learned_tpm) == (6000, None)
    assert "rate limits announced by the server: 6,000 RPM" in str(s).splitlines()
    with FakeServer() as server:  # no x-ratelimit-* headers: nothing learned, no line
        async with async_client(server) as client:
            quiet = (await client.chat.completions.batch(["a"], model=MODEL, check_quota=False)).summary()
    assert quiet.learned_rpm is None and "announced" not in str(quiet)

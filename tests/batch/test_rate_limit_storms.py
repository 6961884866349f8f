"""Servers that keep answering 429 (issue 45): ``Retry-After: 0`` storms, runs of 429s that are no outage, and
a stopped batch that hands back its unfinished items at once. Exact schedules on the engine's clock."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

import holysheep._engine.run as engine_run
from holysheep._engine.iterator import BatchIterator
from holysheep.testing import FakeServer, Fault

from .._fakes import RecordingSender, Sent, sleep_once_counted
from .conftest import MODEL, ClockedEngine, FakeClock, async_client, chat_requests


async def test_retry_after_zero_storm_sends_only_what_the_backoff_allows(engine_clock: ClockedEngine) -> None:
    """3 items against 429 + ``Retry-After: 0`` (40 times, then healthy): each item's retries are spaced by the
    backoff (at least 75 % of 0.5, 1, 2, 4, 8, 8 ... s), so the first 5 s hold at most 4 attempts per item.
    Before: 40 requests at t=0 (the issue measured 3,825 in 5 s)."""
    with FakeServer(faults=[Fault.status(429, retry_after=0)] * 40) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch(["a", "b", "c"], model=MODEL, check_quota=False)
    assert [r.ok for r in results] == [True] * 3 and results.stats.stop_reason is None
    assert [q.status for q in chat_requests(server)].count(429) == 40
    times: dict[str, list[float]] = defaultdict(list)
    for sent in engine_clock.sent:
        times[sent.body["messages"][0]["content"]].append(sent.at)
    for at in times.values():
        for k, (a, b) in enumerate(itertools.pairwise(at)):
            assert b - a >= 0.75 * min(0.5 * 2**k, 8.0) - 1e-9, (k, a, b)
    assert sum(at < 5.0 for at in (s.at for s in engine_clock.sent)) <= 3 * 4


async def test_a_run_of_429s_longer_than_outage_after_s_is_no_outage(engine_clock: ClockedEngine) -> None:
    """30 429s without Retry-After (the batch backs off up to 8 s between them: minutes on the engine's clock),
    with outage_after_s=5: the server is rate-limiting, not down. Every item ends well, nothing stopped (before:
    "outage: no success for 5 s" and 3 items not run)."""
    with FakeServer(faults=[Fault.status(429)] * 30) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch(["a", "b", "c"], model=MODEL, check_quota=False,
                                                          outage_after_s=5)
    assert [r.ok for r in results] == [True] * 3 and results.stats.stop_reason is None
    assert results.stats.rate_limited == 30 and engine_clock.clock.now > 60


def test_only_failures_that_are_not_rate_limits_count_towards_the_outage() -> None:
    """A 429 starts the no-success clock again, from the end of the wait it asked for; other failures after
    it count from there."""
    from holysheep._engine.limits import OutageDetector

    clock = FakeClock()
    outage = OutageDetector(no_success_s=5, clock=clock)
    clock.advance(4.0)
    outage.rate_limited(2.0)  # the batch waits 2 s for it: alive until t=6
    clock.advance(6.0)
    assert outage.record(False) is None  # t=10: 4 s of failures since
    clock.advance(1.0)
    assert outage.record(False) == "outage: no success for 5 s (outage_after_s=5)"


async def test_a_stopped_batch_hands_back_its_unfinished_items_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """rpm=6 (a request every 10 s) and a key the server rejects: the first request's 401 stops the batch while
    the next worker waits 10 s for the bucket and 14 more wait behind it. Every unfinished item ends at once,
    at most one bucket wait later (before: one item per bucket wait, 150 s on the engine's clock)."""
    clock = FakeClock()
    sent: list[Sent] = []

    def build(sender: Any, requests: Any, **kwargs: Any) -> BatchIterator:
        return BatchIterator(RecordingSender(sender, clock, record=Sent, sent=sent), requests, clock=clock,
                             sleep=sleep, **kwargs)

    monkeypatch.setattr(engine_run, "BatchIterator", build)
    with FakeServer() as server:
        sleep = sleep_once_counted(clock, sent, lambda: sum(r.status is not None for r in chat_requests(server)))
        async with async_client(server, api_key="wrong-key") as client:
            results = await client.chat.completions.batch([f"a{i}" for i in range(40)], model=MODEL, rpm=6, tpm=None,
                                                          check_quota=False)
    assert len(results) == 40 and results.stats.stop_reason is not None and "401" in results.stats.stop_reason
    assert len(sent) <= 2 and all(not r.ok for r in results)
    assert clock.now <= 10.0, clock.now


@pytest.mark.parametrize("limits", [{}, {"rpm": None}, {"rpm": None, "tpm": None}])
async def test_the_batch_starts_at_full_concurrency_when_no_limit_is_known(limits: dict[str, Any]) -> None:
    """No round trip is waited for before the rest go (#45: only the first request went until its reply, 1 of
    3,000 in flight for a whole latency): all 8 go before the first reply, also with rpm=None."""
    with FakeServer(latency=0.3) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"s{i}" for i in range(8)], model=MODEL, concurrency=8,
                                                          check_quota=False, **limits)
    assert [r.ok for r in results] == [True] * 8
    chats = chat_requests(server)
    first_reply = min(r.finished_at for r in chats)
    assert all(r.started_at < first_reply for r in chats) and server.max_in_flight == 8

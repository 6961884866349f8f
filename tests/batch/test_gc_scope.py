"""The garbage-collector threshold a batch raises while it sends: only raised, shared, always put back."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import InvalidRequestError
from holysheep._engine.gc_scope import DEFAULT_GC_THRESHOLD, GCScope
from holysheep.testing import FakeServer

from .conftest import MODEL, async_client, sync_client


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_a_scope_raises_only_the_young_threshold_and_puts_it_back() -> None:
    scope = GCScope(10_000)
    scope.enter()
    assert gc.get_threshold() == (10_000, 10, 10)
    scope.enter()  # idempotent: one share per scope
    scope.exit()
    assert gc.get_threshold() == (700, 10, 10)
    scope.exit()  # idempotent
    assert gc.get_threshold() == (700, 10, 10)


def test_concurrent_scopes_share_one_change_and_the_last_one_out_restores() -> None:
    first, second = GCScope(10_000), GCScope(50_000)
    first.enter()
    second.enter()  # joins the change the first made (no second change)
    assert gc.get_threshold() == (10_000, 10, 10)
    first.exit()
    assert gc.get_threshold() == (10_000, 10, 10)  # the second batch still runs
    second.exit()
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_of_the_application_is_kept() -> None:
    gc.set_threshold(25_000, 5, 5)
    scope = GCScope(10_000)
    scope.enter()
    assert gc.get_threshold() == (25_000, 5, 5)
    scope.exit()
    assert gc.get_threshold() == (25_000, 5, 5)


def test_a_change_the_application_made_meanwhile_is_not_undone() -> None:
    scope = GCScope(10_000)
    scope.enter()
    gc.set_threshold(3_000, 20, 20)  # the application's own choice, made while the batch ran
    scope.exit()
    assert gc.get_threshold() == (3_000, 20, 20)


def test_none_leaves_the_collector_alone() -> None:
    scope = GCScope(None)
    scope.enter()
    assert gc.get_threshold() == (700, 10, 10)
    scope.exit()


def test_gc_threshold_is_checked_before_any_request(server: FakeServer) -> None:
    with sync_client(server) as client:
        for bad in (0, -5, 2.5, "10000", True):
            with pytest.raises(InvalidRequestError, match="gc_threshold must be an integer >= 1") as info:
                client.chat.completions.batch(["hi"], model=MODEL, gc_threshold=bad)
            assert info.value.field == "gc_threshold"
    assert server.requests == []


async def test_a_batch_raises_the_threshold_while_it_sends_and_restores_it(server: FakeServer) -> None:
    seen: list[tuple[int, int, int]] = []

    def on_result(_: Any) -> None:
        seen.append(gc.get_threshold())

    async with async_client(server) as client:
        results = await client.chat.completions.batch([f"p{i}" for i in range(20)], model=MODEL, concurrency=4,
                                                      on_result=on_result)
        assert len(results.responses) == 20
        assert seen[0] == (DEFAULT_GC_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (700, 10, 10)

        seen.clear()
        await client.chat.completions.batch(["a", "b"], model=MODEL, gc_threshold=None, on_result=on_result)
        assert seen == [(700, 10, 10)] * 2


async def test_a_failed_or_cancelled_batch_restores_the_threshold(server: FakeServer) -> None:
    async with async_client(server) as client:
        it = client.chat.completions.batch_iter([f"p{i}" for i in range(200)], model=MODEL, concurrency=2)
        first = await it.__anext__()
        assert first.ok and gc.get_threshold()[0] == DEFAULT_GC_THRESHOLD
        await it.aclose()  # stopped early: nothing more is sent
        assert gc.get_threshold() == (700, 10, 10)

    async with async_client(server, api_key="hs_" + "x" * 40) as client:  # rejected: the batch stops at once
        results = await client.chat.completions.batch(["a", "b", "c"], model=MODEL, check_quota=False)
        assert not any(r.ok for r in results)
    assert gc.get_threshold() == (700, 10, 10)


def test_an_iterator_nobody_closed_gives_its_share_back_when_its_loop_ends(server: FakeServer) -> None:
    async def abandon() -> None:
        async with async_client(server) as client:
            it = client.chat.completions.batch_iter([f"p{i}" for i in range(500)], model=MODEL, concurrency=2)
            await it.__anext__()
            assert gc.get_threshold()[0] == DEFAULT_GC_THRESHOLD
        # returns without closing the iterator: asyncio.run cancels its worker tasks

    asyncio.run(abandon())
    assert gc.get_threshold() == (700, 10, 10)

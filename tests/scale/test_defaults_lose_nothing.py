"""The batch loses nothing *with its defaults*: 20 % transient faults (429, 500, 503, connection reset),
no retry or pacing option chosen by the test. Exact counts: every item ok, one result per input, in order,
and every request the server saw is an attempt of some item."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer, Fault

pytestmark = pytest.mark.scale  # 2 x 500 items at 20 % faults: the `scale` group of .ci/run

MIX = {Fault.status(429): 1.0, Fault.status(500): 1.0, Fault.status(503): 1.0, Fault.reset(): 1.0}
MODEL = "gpt-4.1"


def _chat(server: FakeServer) -> list[object]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def _check(results: object, n: int, server: FakeServer) -> None:
    results = list(results)  # type: ignore[call-overload]
    assert len(results) == n
    assert [r.custom_id for r in results] == [f"id-{i}" for i in range(n)]  # one per input, in order
    failed = Counter(type(r.error).__name__ for r in results if not r.ok)
    assert not failed, failed
    for i, r in enumerate(results):
        assert r.index == i and r.response is not None
        assert r.response.choices[0].message.content == f"prompt {i}"
    chat = _chat(server)
    assert len(chat) == sum(r.attempts for r in results)  # every request is an attempt of some item
    faults = Counter(q.fault.name for q in chat if q.fault)  # type: ignore[attr-defined]
    assert len(faults) == 4, faults  # the whole mix happened
    assert sum(faults.values()) == len(chat) - n  # each fault cost exactly one retry


def _items(n: int) -> list[dict[str, object]]:
    return [{"custom_id": f"id-{i}", "messages": [{"role": "user", "content": f"prompt {i}"}]} for i in range(n)]


def test_async_batch_with_defaults_loses_nothing_at_20_percent_faults() -> None:
    n = 600
    with FakeServer(fault_rate=0.2, fault_mix=MIX, seed=7) as server:
        async def main() -> object:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                return await client.chat.completions.batch(_items(n), model=MODEL)

        results = asyncio.run(main())
        _check(results, n, server)
        # 429s were answered, and none of them used up an item's retries
        assert any(q.status == 429 for q in _chat(server))  # type: ignore[attr-defined]


def test_sync_batch_with_defaults_loses_nothing_at_20_percent_faults() -> None:
    n = 600
    with FakeServer(fault_rate=0.2, fault_mix=MIX, seed=8) as server:
        with Client(api_key=server.api_key, base_url=server.url) as client:
            start = time.monotonic()
            results = client.chat.completions.batch(_items(n), model=MODEL)
            assert time.monotonic() - start < 60
        _check(results, n, server)
        assert results.stats.stop_reason is None

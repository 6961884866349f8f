"""A Retry-After above the client's max_retry_after never becomes a flood: the batch pauses for it (up to
max_pause_s) or stops with a resumable stop_reason."""

from __future__ import annotations

import asyncio
from typing import Any

from holysheep import AsyncClient
from holysheep.batch import BatchUnfinishedError
from holysheep.testing import FakeServer, Fault


def _chat(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def test_retry_after_beyond_max_pause_stops_the_batch_resumably() -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(429, retry_after=120)]) as server:
        async def main() -> Any:
            async with AsyncClient(api_key=server.api_key, base_url=server.url, max_retry_after=60) as client:
                return await client.chat.completions.batch([f"x{i}" for i in range(1000)], model="m",
                                                           concurrency=8, max_pause_s=60, check_quota=False)

        results = asyncio.run(main())
    assert len(_chat(server)) <= 8  # only what was already in flight: no flood
    s = results.summary()
    assert s.stop_reason == "the server asked to wait 120 s, longer than max_pause_s=60"
    assert all(isinstance(r.error, BatchUnfinishedError) for r in results)
    assert {r.error.stop_reason for r in results} == {s.stop_reason}  # type: ignore[union-attr]


def test_retry_after_beyond_max_retry_after_pauses_the_whole_batch_then_resends() -> None:
    with FakeServer(faults=[Fault.status(429, retry_after=0.4)]) as server:
        async def main() -> Any:
            async with AsyncClient(api_key=server.api_key, base_url=server.url, max_retry_after=0.1) as client:
                return await client.chat.completions.batch([f"x{i}" for i in range(5)], model="m", concurrency=1,
                                                           max_pause_s=5, check_quota=False)

        results = asyncio.run(main())
    assert all(r.ok for r in results)
    reqs = _chat(server)
    assert len(reqs) == 6 and results[0].attempts == 2
    s = results.summary()
    assert s.pauses == 1 and abs(s.paused_s - 0.4) < 1e-6
    assert reqs[1].started_at - reqs[0].finished_at >= 0.39  # type: ignore[operator]

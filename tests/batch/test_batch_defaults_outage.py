"""docs/batch.md's outage row with the defaults: against a server that fails everything, a 500-item batch
stops after the first window of 100 attempts (plus what was already in flight at the default concurrency
of 16), with the documented stop reason, and every unsent item is resumable."""

from __future__ import annotations

from holysheep import InternalServerError
from holysheep.batch import BatchUnfinishedError
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL, ClockedEngine, async_client, chat_requests


async def test_a_server_that_fails_everything_stops_a_default_batch_after_one_window(
        engine_clock: ClockedEngine) -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"b{i}" for i in range(500)], model=MODEL)
    sent = len(chat_requests(server))
    s = results.summary()
    assert len(results) == 500 and not any(r.ok for r in results)
    assert s.stop_reason == "outage: 100 of the last 100 attempts failed (outage_failure_ratio=0.9)"
    assert sent == s.requests and 100 <= sent <= 100 + 16
    assert all(isinstance(r.error, (BatchUnfinishedError, InternalServerError)) for r in results)
    assert sum(isinstance(r.error, BatchUnfinishedError) for r in results) >= 500 - sent

"""The summary's counts add up with the defaults: every request the server saw is in ``requests``, and
``retries`` is ``requests`` minus the items that were sent at all (a retry that the batch's stop ended
before it went out is no retry), also when 429s and other failures mix."""

from __future__ import annotations

from holysheep.testing import FakeServer, Fault

from .conftest import MODEL, ClockedEngine, async_client, chat_requests


async def test_a_failing_server_counts_one_retry_per_resend_not_one_per_scheduled_retry(
        engine_clock: ClockedEngine) -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"c{i}" for i in range(200)], model=MODEL)
    sent = len(chat_requests(server))
    attempted = sum(r.attempts > 0 for r in results)
    s = results.summary()
    assert s.stop_reason == "outage: 100 of the last 100 attempts failed (outage_failure_ratio=0.9)"
    assert sum(r.attempts for r in results) == sent == s.requests
    assert (s.retries, s.rate_limited) == (sent - attempted, 0)
    assert f"requests {sent} ({sent - attempted} retries; 0 answered 429" in str(s)


async def test_a_stop_during_backoff_leaves_no_phantom_retry() -> None:
    """Five items against a server that fails everything until the no-success stop: each item's last
    scheduled retry was never sent, so it is not counted (before: ``requests 60 (60 retries``)."""
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as failing:
        async with async_client(failing) as client:
            results = await client.chat.completions.batch([f"c{i}" for i in range(5)], model=MODEL,
                                                          outage_after_s=0.3)
    sent = len(chat_requests(failing))
    s = results.summary()
    assert s.stop_reason is not None and s.stop_reason.startswith("outage: no success for")
    assert all(r.attempts >= 1 for r in results) and sum(r.attempts for r in results) == sent == s.requests
    assert s.retries == sent - 5


async def test_counts_add_up_with_429s_and_500s_mixed(engine_clock: ClockedEngine) -> None:
    faults = [Fault.status(429, retry_after=0.5), Fault.status(500), None, Fault.status(429, retry_after=0.5), None,
              Fault.status(503), None, None, None, None, None, None]
    with FakeServer(faults=faults) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"m{i}" for i in range(6)], model=MODEL)
    s = results.summary()
    assert all(r.ok for r in results)
    assert (s.requests, s.retries, s.rate_limited) == (10, 4, 2)
    assert sum(r.attempts for r in results) == len(chat_requests(server)) == 10

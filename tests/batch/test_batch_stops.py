"""How a batch stops: an outage (a resumable error, no retry storm), the retry budget, quota checks and an
exhausted quota, a rejected key (401) before, with and after the probe."""

from __future__ import annotations

from typing import Any

import pytest

from holysheep import AuthenticationError, InternalServerError, QuotaExceededError, RateLimitError
from holysheep.batch import BatchUnfinishedError
from holysheep.testing import FakeServer, Fault

from .conftest import MODEL, ClockedEngine, async_client, chat_requests


async def test_outage_stops_the_batch_with_a_resumable_error_and_no_retry_storm() -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as server:
        async with async_client(server, initial_retry_delay=0.001, max_retry_delay=0.002) as client:
            results = await client.chat.completions.batch([f"b{i}" for i in range(500)], model=MODEL,
                                                          concurrency=10, max_retries=5, check_quota=False)
    assert len(results) == 500 and not any(r.ok for r in results)
    sent = len(chat_requests(server))
    s = results.summary()
    assert sent == s.requests <= 1.2 * 500
    assert s.requests <= 100 + 10  # the outage is seen in the first window of 100 attempts
    assert s.stop_reason == "outage: 100 of the last 100 attempts failed (outage_failure_ratio=0.9)"
    unfinished = [r for r in results if isinstance(r.error, BatchUnfinishedError)]
    assert len(unfinished) >= 500 - 100
    assert all(r.error.stop_reason == s.stop_reason for r in unfinished)  # type: ignore[union-attr]
    assert all(isinstance(r.error, (BatchUnfinishedError, InternalServerError)) for r in results)


async def test_retries_beyond_the_budget_share_are_paced_not_refused() -> None:
    mix = [Fault.status(500)]
    with FakeServer(fault_rate=0.3, fault_mix=mix, seed=3) as server:
        async with async_client(server, initial_retry_delay=0.001, max_retry_delay=0.002) as client:
            results = await client.chat.completions.batch([f"p{i}" for i in range(100)], model=MODEL,
                                                          concurrency=10, max_retries=10, retry_budget=0.05,
                                                          check_quota=False)
    s = results.summary()
    assert all(r.ok for r in results), s
    assert s.retries_paced == results.stats.retries_paced > 0 and "paced" not in str(s)  # no internal words
    assert s.retries > 5 and results.stats.retries_paced > 0  # over the 5 % share: paced, every item done
    assert s.requests == 100 + s.retries == len(chat_requests(server))


async def test_quota_precheck_warns_or_fails_fast(caplog: pytest.LogCaptureFixture) -> None:
    """One message (a logging WARNING; no RuntimeWarning too: warnings are errors here)."""
    with FakeServer(quota_limit=100) as server:
        async with async_client(server) as client:
            with pytest.raises(QuotaExceededError, match="require_quota"):
                await client.chat.completions.batch(["x"] * 10, model=MODEL, max_tokens=50, require_quota=True)
            assert chat_requests(server) == []
            results = await client.chat.completions.batch(["x"] * 3, model=MODEL, max_tokens=50)
            assert len(results.responses) == 3
    warned = [r.getMessage() for r in caplog.records if "account has 100 left" in r.getMessage()]
    assert len(warned) == 1 and warned[0].endswith("Pass check_quota=False to skip the quota check.")


async def test_quota_exhausted_stops_without_retries() -> None:
    faults: list[Any] = [None] * 5 + [Fault.quota_exhausted()]
    with FakeServer(faults=faults) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"q{i}" for i in range(40)], model=MODEL, concurrency=1)
    assert [r.ok for r in results[:5]] == [True] * 5
    rest = results[5:]
    assert all(isinstance(r.error, RateLimitError) and r.error.type == "insufficient_quota" for r in rest)
    assert len({id(r.error) for r in rest}) == 1  # every unfinished item reports that same error
    assert len(chat_requests(server)) == 6 and results.summary().retries == 0
    assert results.summary().stop_reason is not None and "quota" in results.summary().stop_reason


async def test_401_stops_after_the_first_wave_and_the_quota_check(engine_clock: ClockedEngine) -> None:
    """rpm="auto" (the default): the batch starts at full concurrency (16, no probe: #45) with the quota check
    alongside, so a rejected key costs at most the first wave (15 requests and the check: it holds one of the
    16 slots); the other items end with the same error at once: the engine never waits (no pause, no bucket, no
    retry) and nothing else goes out."""
    with FakeServer() as server:
        async with async_client(server, api_key="wrong-key") as client:
            results = await client.chat.completions.batch([f"a{i}" for i in range(500)], model=MODEL)
    assert all(isinstance(r.error, AuthenticationError) for r in results) and len(results) == 500
    sent = len(chat_requests(server))
    assert 1 <= sent <= 15 and results.summary().requests == sent
    assert all((s.at, s.status) == (0.0, 401) for s in engine_clock.sent)
    assert engine_clock.clock.sleeps == []  # the engine never waited for anything on its clock
    assert sorted(r.attempts for r in results) == [0] * (500 - sent) + [1] * sent
    s = results.summary()
    assert (s.retries, s.pauses, s.rate_limited) == (0, 0, 0)
    assert [r.path for r in server.requests].count("/v1/quota") == 1
    assert "401" in str(s.stop_reason)


@pytest.mark.parametrize("options", [{"rpm": 600, "tpm": None}, {"rpm": None, "tpm": None}, {"require_quota": True}])
async def test_401_aborts_before_dispatch_via_quota_check(options: dict[str, Any]) -> None:
    """Without a probe (fixed or no limits), or with require_quota, the check comes before any request."""
    with FakeServer() as server:
        async with async_client(server, api_key="wrong-key") as client:
            results = await client.chat.completions.batch([f"a{i}" for i in range(50)], model=MODEL, **options)
    assert all(isinstance(r.error, AuthenticationError) for r in results) and len(results) == 50
    assert chat_requests(server) == [] and results.summary().requests == 0
    assert "401" in str(results.summary().stop_reason)


async def test_quota_check_runs_alongside_the_first_requests() -> None:
    """The default batch's quota check and its first requests are in flight together: nobody waits for it
    (no round trip before the rest go, #45), and with it never more than `concurrency` in flight."""
    with FakeServer(latency=0.2) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch(["a", "b", "c"], model=MODEL, concurrency=4)
    assert [r.ok for r in results] == [True, True, True]
    quota = next(r for r in server.requests if r.path == "/v1/quota")
    chats = chat_requests(server)
    assert quota.finished_at is not None and all(r.finished_at is not None for r in chats)
    assert all(r.started_at < quota.finished_at for r in chats)  # every request went before the check's reply
    assert server.max_in_flight == 4  # the check holds one of the 4 slots


async def test_401_mid_batch_stops_fast_with_no_retries() -> None:
    with FakeServer(latency=0.01, faults=[None, None, Fault.unauthorized()]) as server:
        async with async_client(server) as client:
            results = await client.chat.completions.batch([f"a{i}" for i in range(300)], model=MODEL,
                                                          concurrency=4, check_quota=False)
    failed = results.failed
    assert len(results) == 300 and len(failed) >= 290
    assert all(isinstance(r.error, AuthenticationError) for r in failed)
    assert len(chat_requests(server)) <= 2 + 4 and results.summary().retries == 0
    assert all(r.attempts <= 1 for r in results)

"""Pure pieces: input normalisation, the token estimate, buckets, AIMD, the retry budget, the pause gate."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import InvalidRequestError
from holysheep._engine.limits import AIMDLimiter, OutageDetector, PauseGate, RetryPace, TokenBucket, TokenEstimator
from holysheep._engine.requests import estimate_tokens, normalize_item

from .conftest import FakeClock


def test_normalize_prompt_messages_dict_and_batch_api_line() -> None:
    d = {"model": "m", "max_tokens": 5}
    assert normalize_item("hi", 0, d).params == {"model": "m", "max_tokens": 5,
                                                 "messages": [{"role": "user", "content": "hi"}]}
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert normalize_item(msgs, 1, d).params["messages"] == msgs
    item = normalize_item({"custom_id": "a", "messages": msgs, "max_tokens": 9}, 2, d)
    assert (item.custom_id, item.params["max_tokens"], item.index) == ("a", 9, 2)
    line = {"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "x", "messages": msgs}}
    item = normalize_item(line, 3, d)
    assert item.custom_id == "b" and item.params["model"] == "x" and item.invalid is None
    assert normalize_item({"prompt": "p"}, 4, d).params["messages"] == [{"role": "user", "content": "p"}]


@pytest.mark.parametrize("bad, field", [
    (123, "requests"),
    ({"custom_id": "z"}, "messages"),
    ({"custom_id": "z", "method": "GET", "url": "/v1/chat/completions", "body": {}}, "method"),
    ({"custom_id": "z", "url": "/v1/completions", "body": {}}, "url"),
    ({"custom_id": "z", "url": "/v1/embeddings", "body": {}}, "body"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
])
@pytest.mark.parametrize("where", ["item 7: ", None])  # None: numbered only when there is an error
def test_normalize_bad_items_carry_their_error(bad: object, field: str, where: str | None) -> None:
    item = normalize_item(bad, 7, {"model": "m"}, where=where)
    assert isinstance(item.invalid, InvalidRequestError)
    assert item.invalid.field == field and str(item.invalid).startswith("item 7: ")
    if isinstance(bad, dict) and "custom_id" in bad:
        assert item.custom_id == "z"


def test_missing_model_is_an_item_error() -> None:
    item = normalize_item("hi", 0, {})
    assert isinstance(item.invalid, InvalidRequestError) and item.invalid.field == "model"
    assert item.est_tokens == 0


def test_tuples_and_str_subclasses_are_items_and_the_estimate_waits_until_asked() -> None:
    class Prompt(str):
        pass

    d = {"model": "m", "max_tokens": 4}
    item = normalize_item(({"role": "user", "content": "x" * 8},), 0, d)
    assert item.params["messages"] == [{"role": "user", "content": "x" * 8}] and item.invalid is None
    assert item._est_tokens is None  # not worked out: only a TPM bucket or the quota check asks
    assert item.token_estimate() == item.est_tokens == 2 + 4
    assert normalize_item(Prompt("hi"), 1, d).params["messages"] == [{"role": "user", "content": "hi"}]
    assert "stream" not in normalize_item({"messages": [{"role": "user", "content": "x"}], "stream": False}, 2,
                                          d).params


def test_estimate_is_chars_over_4_plus_max_tokens() -> None:
    assert estimate_tokens({"messages": [{"content": "x" * 40}], "max_tokens": 100}) == 110
    assert estimate_tokens({"messages": [{"content": [{"type": "text", "text": "y" * 8}]}], "max_tokens": 1}) == 3
    assert estimate_tokens({"messages": [{"content": "abc"}]}) == 1 + 256  # default completion budget
    assert estimate_tokens({"messages": [{"content": ""}], "max_tokens": 10, "n": 3}) == 30


def test_estimator_learns_from_usage() -> None:
    est = TokenEstimator()
    assert est.estimate(1000) == 1000
    for _ in range(20):
        est.observe(1000, 100)
    assert est.estimate(1000) == pytest.approx(100, abs=2)


async def test_token_bucket_paces_and_refunds() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=100.0, capacity=10.0, clock=clock, sleep=clock.sleep)
    for _ in range(30):
        await bucket.take(1)
    assert clock.sleeps == [0.01] * 20  # 10 from the burst, then one every 10 ms
    assert clock.now == pytest.approx(0.2)
    bucket.adjust(+1000)
    assert bucket.level == bucket.capacity  # refunds never exceed capacity
    big = TokenBucket(rate=1000.0, capacity=10.0, clock=clock, sleep=clock.sleep)
    await big.take(50)  # larger than capacity: allowed from a full bucket, leaves debt
    assert big.level == -40


async def test_rpm_bucket_schedule_over_a_minute() -> None:
    """600 RPM with a one-second burst: 10 at once, then exactly one every 0.1 s."""
    clock = FakeClock()
    bucket = TokenBucket.per_minute(600, clock=clock, sleep=clock.sleep)
    sent_at = []
    for _ in range(70):
        await bucket.take(1)
        sent_at.append(round(clock.now, 6))
    assert sent_at[:10] == [0.0] * 10
    assert sent_at[10:] == [round(0.1 * k, 6) for k in range(1, 61)]
    assert sum(1 for t in sent_at if t < 6.0) == 69  # never more than 600/min + the burst


async def test_aimd_halves_once_per_epoch_and_climbs_back() -> None:
    lim = AIMDLimiter(8)
    epoch = lim.epoch
    assert lim.on_rate_limited(epoch) is True
    assert lim.on_rate_limited(epoch) is False  # same epoch: a burst of 429s halves once
    assert lim.limit == 4 and lim.decreases == 1
    for _ in range(200):
        lim.on_success()
    assert lim.limit == 8 and lim.lowest == 4


async def test_aimd_never_exceeds_limit() -> None:
    lim = AIMDLimiter(3)
    peak = 0

    async def worker() -> None:
        nonlocal peak
        await lim.acquire()
        peak = max(peak, lim.in_flight)
        await asyncio.sleep(0.005)
        lim.release()

    await asyncio.gather(*(worker() for _ in range(30)))
    assert peak == 3 and lim.in_flight == 0 and lim.peak_in_flight == 3


def test_retry_pace_never_refuses_and_paces_beyond_the_share() -> None:
    clock = FakeClock()
    pace = RetryPace(0.2, min_requests=50, floor_per_s=10.0, clock=clock)
    waits = [pace.wait_for() for _ in range(14)]
    assert waits[:10] == [0.0] * 10  # the first 50 requests share 10 retries, sent at once
    assert waits[10:] == pytest.approx([0.0, 0.1, 0.2, 0.3])  # then the floor: 10 retries per second
    assert pace.retries == 14 and pace.paced == 4
    clock.now = 10.0
    for _ in range(1000):
        pace.on_first_attempt()
    assert pace.rate() == pytest.approx(20.0)  # 20 % of 100 first attempts per second beats the floor
    assert [pace.wait_for() for _ in range(186)][-1] == 0.0  # share is now 200 retries
    assert RetryPace(None, clock=clock).wait_for() == 0.0


def test_outage_detector_ratio_and_silence() -> None:
    clock = FakeClock()
    det = OutageDetector(no_success_s=30.0, failure_ratio=0.9, window=10, clock=clock)
    assert [det.record(False) for _ in range(9)] == [None] * 9  # the window is not full yet
    assert det.record(True) is None
    assert det.record(False) == "outage: 9 of the last 10 attempts failed (outage_failure_ratio=0.9)"
    flaky = OutageDetector(no_success_s=30.0, failure_ratio=0.9, window=10, clock=clock)
    assert {flaky.record(i % 5 != 0) for i in range(200)} == {None}  # 20 % faults are not an outage
    det2 = OutageDetector(no_success_s=30.0, failure_ratio=1.0, window=1000, clock=clock)
    clock.now += 29.9
    assert det2.record(False) is None
    clock.now += 0.1
    reason = det2.record(False)
    assert reason == "outage: no success for 30 s (outage_after_s=30)"
    det2.record(True)
    assert det2.check() is None


async def test_pause_gate_blocks_until_resume() -> None:
    clock = FakeClock()
    gate = PauseGate(clock=clock, sleep=clock.sleep)
    gate.pause_for(0.15)
    gate.pause_for(0.05)  # a shorter pause never shortens it
    await gate.wait()
    assert clock.sleeps == [0.1, 0.05]
    assert gate.pauses == 1 and gate.paused_s == 0.15


def test_clone_of_keyless_client_does_not_pick_up_the_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep import AsyncClient, Client

    monkeypatch.setenv("HOLYSHEEP_API_KEY", "hs_EnvKeyMustNotTravel0123456789")
    client = Client(base_url="http://127.0.0.1:9/v1", api_key="")
    clone = AsyncClient.from_config(client.config)
    assert "authorization" not in clone.config.base_headers
    assert clone.config.base_url == client.config.base_url


def test_quota_estimate_is_exact_for_short_inputs_and_sampled_for_long_ones() -> None:
    from holysheep._engine.run import ESTIMATE_SAMPLE, _estimate

    defaults = {"model": "m", "max_tokens": 10}
    short = ["x" * 40] * 100
    assert _estimate(short, defaults) == 100 * (10 + 10)
    mixed = [("x" * 40 if i % 8 < 4 else [{"role": "user", "content": "y" * 8}]) for i in range(4 * ESTIMATE_SAMPLE)]
    exact = sum(estimate_tokens({**defaults, "messages": [{"content": "x" * 40 if i % 8 < 4 else "y" * 8}]})
                for i in range(len(mixed)))
    assert exact == 2 * ESTIMATE_SAMPLE * 20 + 2 * ESTIMATE_SAMPLE * 12
    assert _estimate(mixed, defaults, exact=True) == exact
    assert _estimate(mixed, defaults) == exact  # the even sample (every 4th item) has half of each kind

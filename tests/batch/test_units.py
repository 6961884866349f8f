"""Pure pieces: input normalisation, the token estimate, buckets, AIMD, the retry budget, the pause gate."""

from __future__ import annotations

import asyncio
import time

import pytest

from holysheep import InvalidRequestError
from holysheep.batch._budget import RetryBudget
from holysheep.batch._limits import AIMDLimiter, PauseGate, TokenBucket, TokenEstimator
from holysheep.batch._requests import estimate_tokens, normalize_item


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
    ({"custom_id": "z", "url": "/v1/embeddings", "body": {}}, "url"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
])
def test_normalize_bad_items_carry_their_error(bad: object, field: str) -> None:
    item = normalize_item(bad, 7, {"model": "m"}, where="item 7: ")
    assert isinstance(item.invalid, InvalidRequestError)
    assert item.invalid.field == field and "item 7" in str(item.invalid)
    if isinstance(bad, dict) and "custom_id" in bad:
        assert item.custom_id == "z"


def test_missing_model_is_an_item_error() -> None:
    item = normalize_item("hi", 0, {})
    assert isinstance(item.invalid, InvalidRequestError) and item.invalid.field == "model"


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
    bucket = TokenBucket(rate=100.0, capacity=10.0)
    start = time.monotonic()
    for _ in range(30):
        await bucket.take(1)
    elapsed = time.monotonic() - start
    assert 0.18 <= elapsed < 0.5  # 10 from the burst, 20 more at 100/s
    bucket.adjust(+1000)
    assert bucket.level == bucket.capacity  # refunds never exceed capacity
    big = TokenBucket(rate=1000.0, capacity=10.0)
    await big.take(50)  # larger than capacity: allowed from a full bucket, leaves debt
    assert big.level == pytest.approx(-40, abs=1)


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


def test_retry_budget_is_20_percent_after_50() -> None:
    budget = RetryBudget(0.2, 50)
    assert sum(budget.try_take() for _ in range(100)) == 10  # first 50 share 10 retries
    for _ in range(100):
        budget.on_first_attempt()
    assert sum(budget.try_take() for _ in range(100)) == 10  # 20 % of 100 in all
    assert budget.denied == 180
    assert RetryBudget(None).try_take() is True


async def test_pause_gate_blocks_until_resume() -> None:
    gate = PauseGate()
    gate.pause_for(0.15)
    gate.pause_for(0.05)  # a shorter pause never shortens it
    start = time.monotonic()
    await gate.wait()
    assert time.monotonic() - start >= 0.14
    assert gate.pauses == 1 and gate.paused_s == pytest.approx(0.15, abs=0.02)


def test_clone_of_keyless_client_does_not_pick_up_the_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep import Client
    from holysheep.batch._sync import clone_async_client

    monkeypatch.setenv("HOLYSHEEP_API_KEY", "hs_EnvKeyMustNotTravel0123456789")
    client = Client(base_url="http://127.0.0.1:9/v1", api_key="")
    clone = clone_async_client(client)
    assert "authorization" not in clone._config.base_headers
    assert clone._config.base_url == client._config.base_url

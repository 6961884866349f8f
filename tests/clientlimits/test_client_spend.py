"""The client-wide spend cap (``Client(max_cost_usd=..., prices=...)``): every request the client sends on its own,
``as_openai()``'s included, reserves its worst case before it is sent and settles with the reply's usage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, InvalidRequestError, QuotaExceededError, SpendCapError

KEY = "hs_TestKey0123456789abcdefWXYZ"
BASE = "https://api.holysheep.ai/v1"
PRICES = {"m": (1.0, 2.0)}  # USD per million input / output tokens
MESSAGES = [{"role": "user", "content": "Hi"}]
WORST = (45 * 1.0 + 10 * 2.0) / 1e6
"""The worst case of ``create(model="m", messages=MESSAGES, max_tokens=10)``: 45 bytes of prompt JSON (a token per
byte at most) at $1/M plus 10 output tokens at $2/M."""


def completion(prompt: int = 5, completion_tokens: int = 2) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                      "total_tokens": prompt + completion_tokens}}


def call(kind: str, fn: Any, **options: Any) -> Any:
    """``fn(client)`` on a sync ``Client`` or (awaited) an ``AsyncClient`` with ``options``."""
    if kind == "sync":
        with Client(api_key=KEY, max_retries=0, **options) as client:
            return fn(client)

    async def main() -> Any:
        async with AsyncClient(api_key=KEY, max_retries=0, **options) as client:
            result = fn(client)
            return await result if asyncio.iscoroutine(result) else result

    return asyncio.run(main())


def create(client: Any) -> Any:
    return client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)


def test_a_reply_counts_its_usage_at_the_clients_prices(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(5, 2))

    async def twice(client: Any) -> tuple[float, float]:
        await create(client)
        await create(client)
        return client.spent_usd, client._budget.reserved_usd

    def twice_sync(client: Client) -> tuple[float, float]:
        create(client)
        create(client)
        return client.spent_usd, client._budget.reserved_usd  # type: ignore[union-attr]

    spent, reserved = call(kind, twice_sync if kind == "sync" else twice, max_cost_usd=1.0, prices=PRICES)
    assert route.call_count == 2
    assert spent == 2 * (5 * 1.0 + 2 * 2.0) / 1e6  # 18e-6: the usage, not the 65e-6 reserved
    assert reserved == 0.0


def test_a_request_that_does_not_fit_is_refused_before_any_io(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion())
    with pytest.raises(SpendCapError) as info:
        call(kind, create, max_cost_usd=WORST / 2, prices=PRICES)
    assert route.call_count == 0
    error = info.value
    assert isinstance(error, QuotaExceededError)
    assert (error.spent_usd, error.reserved_usd, error.max_cost_usd) == (0.0, 0.0, WORST / 2)
    assert error.worst_case_usd == WORST
    assert str(error) == ("max_cost_usd=$0.000032 reached: $0.000000 spent, and this request may cost up to "
                          "$0.000065. Nothing was sent (raise the client's max_cost_usd, or lower the request's output "
                          "limit).")


def test_the_cap_holds_across_requests(kind: str, respx_mock: respx.MockRouter) -> None:
    """$0.0001: the first request spends $0.000065 (usage equal to its worst case); the second no longer fits."""
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(45, 10))

    def sync(client: Client) -> float | None:
        create(client)
        with pytest.raises(SpendCapError):
            create(client)
        return client.spent_usd

    async def run_async(client: AsyncClient) -> float | None:
        await create(client)
        with pytest.raises(SpendCapError):
            await create(client)
        return client.spent_usd

    spent = call(kind, sync if kind == "sync" else run_async, max_cost_usd=0.0001, prices=PRICES)
    assert route.call_count == 1
    assert spent == WORST


def test_an_unpriced_model_under_a_cap_names_prices(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion())
    with pytest.raises(InvalidRequestError) as info:
        call(kind, lambda c: c.chat.completions.create(model="no-such-model-x", messages=MESSAGES),
             max_cost_usd=1.0)
    assert route.call_count == 0
    assert info.value.field == "prices"
    assert "pass prices={'no-such-model-x': (input_per_m, output_per_m)}" in str(info.value)
    assert "Nothing was sent" in str(info.value)


def test_an_error_status_releases_and_a_larger_bill_counts(kind: str, respx_mock: respx.MockRouter) -> None:
    replies = iter([httpx.Response(400, json={"error": {"message": "bad"}}),
                    httpx.Response(200, json=completion(100, 50))])  # billed more than the 65e-6 reserved
    route = respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=lambda request: next(replies))

    def sync(client: Client) -> tuple[float | None, float]:
        with pytest.raises(Exception, match="bad"):
            create(client)
        assert client.spent_usd == 0.0
        create(client)
        return client.spent_usd, client._budget.reserved_usd  # type: ignore[union-attr]

    async def run_async(client: AsyncClient) -> tuple[float | None, float]:
        with pytest.raises(Exception, match="bad"):
            await create(client)
        assert client.spent_usd == 0.0
        await create(client)
        return client.spent_usd, client._budget.reserved_usd  # type: ignore[union-attr]

    spent, reserved = call(kind, sync if kind == "sync" else run_async, max_cost_usd=1.0, prices=PRICES)
    assert route.call_count == 2
    assert spent == (100 * 1.0 + 50 * 2.0) / 1e6
    assert reserved == 0.0


def test_copies_share_the_budget_and_a_new_cap_is_its_own(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(5, 2))
    with Client(api_key=KEY, max_cost_usd=1.0, prices=PRICES) as client:
        copy = client.with_options(timeout=5.0)
        own = client.with_options(max_cost_usd=0.5)
        create(copy)
        create(own)
        assert client.spent_usd == copy.spent_usd == 9e-6
        assert (own.max_cost_usd, own.spent_usd) == (0.5, 9e-6)
        with pytest.raises(InvalidRequestError, match="goes with max_cost_usd"):
            client.with_options(prices={"m": (1, 1)})


def test_embeddings_and_post_are_capped(respx_mock: respx.MockRouter) -> None:
    embed = respx_mock.post(f"{BASE}/embeddings").respond(200, json={
        "object": "list", "model": "m", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}],
        "usage": {"prompt_tokens": 3, "total_tokens": 3}})
    post = respx_mock.post(f"{BASE}/rerank").respond(200, json={"usage": {"prompt_tokens": 1}})
    with Client(api_key=KEY, max_cost_usd=1.0, prices=PRICES) as client:
        client.embeddings.create(model="m", input="abc")
        assert client.spent_usd == 3e-6
        with pytest.raises(InvalidRequestError, match="no price for model 'other'"):
            client.post("/rerank", body={"model": "other", "query": "q"})
        assert (embed.call_count, post.call_count) == (1, 0)


def test_as_openai_is_capped_and_raises_the_holysheep_error(kind: str, respx_mock: respx.MockRouter) -> None:
    """openai-python lets an exception that is not httpx's through as it is: its caller sees `SpendCapError`."""
    pytest.importorskip("openai")
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(5, 2))

    def sync(client: Client) -> float | None:
        oa = client.as_openai()
        oa.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)  # type: ignore[arg-type]
        with pytest.raises(SpendCapError):
            oa.chat.completions.create(model="m", messages=MESSAGES, max_tokens=100_000)  # type: ignore[arg-type]
        return client.spent_usd

    async def run_async(client: AsyncClient) -> float | None:
        oa = client.as_openai()
        await oa.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)  # type: ignore[arg-type]
        with pytest.raises(SpendCapError):
            await oa.chat.completions.create(model="m", messages=MESSAGES,  # type: ignore[arg-type]
                                             max_tokens=100_000)
        return client.spent_usd

    spent = call(kind, sync if kind == "sync" else run_async, max_cost_usd=0.01, prices=PRICES)
    assert route.call_count == 1
    assert spent == 9e-6
    assert json.loads(route.calls[0].request.content)["max_tokens"] == 10


def test_a_batch_spends_from_the_clients_budget(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(5, 2))
    with Client(api_key=KEY, max_cost_usd=0.001, prices=PRICES) as client:
        create(client)
        results = client.chat.completions.batch(["a", "b"], model="m", max_tokens=10, check_quota=False)
        assert [r.ok for r in results] == [True, True]
        assert results.stats.max_cost_usd == pytest.approx(0.001 - 9e-6, abs=1e-15)  # what the client had left
        assert results.stats.spent_usd == 18e-6
        assert client.spent_usd == 27e-6
        assert client._budget is not None and client._budget.reserved_usd == 0.0
    assert route.call_count == 3


def test_a_batch_cap_above_what_the_client_has_left_is_bounded(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=completion(45, 10))
    with Client(api_key=KEY, max_cost_usd=0.0001, prices=PRICES) as client:
        create(client)  # 65e-6 spent: 35e-6 left, less than one item's worst case
        results = client.chat.completions.batch(["Hi"], model="m", max_tokens=10, max_cost_usd=5.0,
                                                check_quota=False)
        assert results.stats.max_cost_usd == pytest.approx(0.0001 - WORST, abs=1e-15)
        assert not results[0].ok
        assert client.spent_usd == WORST
    assert route.call_count == 1

"""Issue 45 (money): a server that bills honestly, for more than the request's own limits say, never takes the
batch past ``max_cost_usd`` unnoticed. The reservation reads floats and strings as a server does (``n=5.0``,
``max_tokens="8000"``), a reasoning budget and Responses' ``max_output_tokens``; a reply billed beyond its
reservation counts in full, scales what is reserved after it, stops the batch once past the cap, and the summary
says so."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._core.call import Call, Outcome
from holysheep._engine.run import abatch
from holysheep._engine.spend import (
    PART_TOKEN_BOUND,
    Price,
    SpendCap,
    assumption,
    input_token_bound,
    output_token_bound,
)
from holysheep.batch import BatchUnfinishedError
from holysheep.types.chat import ChatCompletion

MODEL = "priced-model"
PRICE = Price(MODEL, 3.0, 15.0)
BASE = {"model": MODEL, "prices": {MODEL: (3.0, 15.0)}, "check_quota": False}
MESSAGES = [{"role": "user", "content": "hello"}]
IMAGE = [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]

Bill = Callable[[dict[str, Any]], tuple[int, int]]


def _count(value: Any) -> int:
    return int(float(value)) if value is not None else 0


def honest(body: dict[str, Any]) -> tuple[int, int]:
    """What an honest lenient server bills: the prompt's bytes, 5,000 tokens per image, every choice of ``n``
    (read as a float too), the output limit in full (read as a string too), and reasoning of twice that limit
    on top of it when reasoning was asked for without a budget."""
    images = sum(1 for m in body.get("messages") or () if isinstance(m.get("content"), list)
                 for p in m["content"] if p.get("type") == "image_url")
    prompt = len(json.dumps(body.get("messages")).encode()) + len(json.dumps(body.get("tools") or "")) + 5000 * images
    limit = max(_count(body.get(k)) for k in ("max_tokens", "max_completion_tokens", "max_output_tokens"))
    reasoning = 2 * limit if body.get("reasoning_effort") else 0
    return prompt, (limit + reasoning) * max(1, _count(body.get("n")))


class BillingSender:
    """A batch Sender that plans on a real client and bills each attempt with ``bill``."""

    def __init__(self, client: AsyncClient, bill: Bill) -> None:
        self._inner = client.sender()
        self._bill = bill
        self.billed: list[float] = []
        self.in_flight = 0
        self.peak = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def attempt(self, call: Call) -> Outcome:
        body = json.loads(call.content or b"{}")
        prompt, completion = self._bill(body)
        self.billed.append(PRICE.cost(prompt, completion))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        return Outcome(value=ChatCompletion.model_validate({
            "id": "c", "object": "chat.completion", "created": 0, "model": MODEL,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "answer"}}]}))


def _run(items: list[dict[str, Any]], cap: float, bill: Bill = honest, **kw: Any) -> tuple[BillingSender, Any]:
    async def main() -> tuple[BillingSender, Any]:
        async with AsyncClient(api_key="hs-test", base_url="http://127.0.0.1:9/v1") as client:
            sender = BillingSender(client, bill)
            results = await abatch(sender, items, {**BASE, "max_cost_usd": cap, "concurrency": 8, **kw})
            return sender, results

    return asyncio.run(main())


@pytest.mark.parametrize(("fields", "bound"), [
    ({"max_tokens": 8000.0}, 8000), ({"max_tokens": "8000"}, 8000), ({"max_tokens": 2.5}, 3),
    ({"max_tokens": 100, "n": 5.0}, 500), ({"max_tokens": 100, "n": "5"}, 500),
    ({"max_tokens": 100, "thinking": {"type": "enabled", "budget_tokens": 1024.0}}, 1124),
    ({"max_tokens": 100, "reasoning": {"max_tokens": 300}}, 400),
])
def test_the_output_bound_reads_numbers_as_a_lenient_server_does(fields: dict[str, Any], bound: int) -> None:
    body = {"model": MODEL, "messages": MESSAGES, **fields}
    assert output_token_bound(body) == (bound, True)
    assert assumption(body) is None


def test_the_responses_format_reserves_max_output_tokens_read_leniently() -> None:
    from holysheep._core.wire import responses_wire

    wire = responses_wire()
    body = {"model": MODEL, "input": "hello", "max_output_tokens": 700.0}
    assert output_token_bound(body, wire) == (700, True) and assumption(body, wire) is None
    reasoning = {**body, "reasoning": {"effort": "high"}}
    assert assumption(reasoning, wire) == f"{MODEL}+reasoning"


def test_which_bounds_are_assumptions() -> None:
    assert assumption({"model": "m", "messages": MESSAGES}) == "m+no-limit"
    reasoning = {"model": "m", "messages": MESSAGES, "max_tokens": 5, "reasoning_effort": "high"}
    assert assumption(reasoning) == "m+reasoning"
    assert assumption({"model": "m", "messages": MESSAGES, "max_tokens": 5, "reasoning_effort": "minimal"}) is None
    assert assumption({"model": "m", "messages": IMAGE}) == "m+no-limit+parts"
    assert input_token_bound({"messages": IMAGE}) > PART_TOKEN_BOUND
    responses_image = [{"role": "user", "content": [{"type": "input_text", "text": "x"},
                                                    {"type": "input_image", "image_url": "data:,"}]}]
    from holysheep._core.wire import responses_wire

    assert input_token_bound({"input": responses_image}, responses_wire()) > PART_TOKEN_BOUND


@pytest.mark.parametrize("item", [
    {"messages": MESSAGES, "max_tokens": 200, "reasoning_effort": "high"},
    {"messages": MESSAGES, "max_tokens": 200, "extra_body": {"n": 5.0}},
    {"messages": MESSAGES, "max_tokens": 200, "extra_body": {"max_tokens": 8000.0}},
    {"messages": IMAGE, "max_tokens": 20},
    {"messages": MESSAGES, "max_tokens": 20, "tools": [{"type": "function", "function": {
        "name": "lookup", "description": "look it up " * 300, "parameters": {"type": "object", "properties": {}}}}]},
], ids=["reasoning", "n-float", "max-tokens-float", "image", "tool-prompt"])
def test_the_cap_holds_against_a_server_that_bills_honestly(item: dict[str, Any]) -> None:
    """A plain first item (billed as reserved) goes first, then 40 of the kind under test, 8 in flight."""
    plain = {"messages": MESSAGES, "max_tokens": 1}
    first = honest(json.loads(json.dumps({**item, **item.get("extra_body", {}), "model": MODEL})))
    cap = PRICE.cost(*honest({**plain, "model": MODEL})) + PRICE.cost(*first) * 3.5  # three and a half replies
    sender, results = _run([plain] + [item] * 40, cap)
    assert sum(sender.billed) <= cap * (1 + 1e-9)  # what the server billed never passed the cap
    assert results.stats.spent_usd == pytest.approx(sum(sender.billed))  # and the batch says what it billed
    assert 3 <= len(sender.billed) <= 4
    unfinished = [r for r in results if isinstance(r.error, BatchUnfinishedError)]
    assert len(unfinished) == 41 - len(sender.billed)


def test_a_reply_billed_past_the_cap_counts_in_full_stops_at_once_and_the_summary_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 100}
    worst = PRICE.cost(input_token_bound(body), 100)

    def overbill(body: dict[str, Any]) -> tuple[int, int]:
        return 10, 999_999

    with caplog.at_level(logging.WARNING, logger="holysheep.batch"):
        sender, results = _run([{"messages": MESSAGES}] * 10, worst * 3.5, overbill, max_tokens=100, concurrency=1)
    assert len(sender.billed) == 1  # stopped at once: nothing more was sent
    billed = PRICE.cost(10, 999_999)
    stats = results.stats
    assert stats.spent_usd == pytest.approx(billed) and stats.overbilled == 1
    assert stats.overbilled_usd == pytest.approx(billed - worst)
    assert (stats.stop_reason or "").startswith("max_cost_usd=$") and "passed" in (stats.stop_reason or "")
    summary = results.summary()
    assert summary.overbilled == 1 and summary.to_dict()["overbilled_usd"] == pytest.approx(billed - worst, 1e-5)
    assert "the server billed $" in str(summary) and "more than was asked for on 1 reply" in str(summary)
    assert sum(1 for r in caplog.records if "more than the $" in r.getMessage()) == 1


def test_an_overbilled_reply_scales_the_reservations_after_it() -> None:
    from holysheep._engine.spend import Pricer

    cap = SpendCap(10.0, Pricer({MODEL: (3.0, 15.0)}))
    assert cap.try_reserve(1.0) and cap.try_reserve(1.0)
    assert cap.settle(1.0, 3.0) == 3.0  # billed three times its reservation
    assert cap.overage == 3.0 and cap.spent_usd == 3.0
    # in flight: 1.0 reserved, which may cost 3.0; 3.0 + (1.0 + 1.0) x 3 = 9.0 fits, another would not
    assert cap.try_reserve(1.0)
    assert not cap.try_reserve(0.5)
    assert cap.settle(1.0, None) == 1.0 and cap.settle(1.0, 0.5) == 0.5  # no usage: the reservation counts


def test_an_assumed_bound_goes_alone_until_a_reply_settles() -> None:
    from holysheep._engine.spend import Pricer

    cap = SpendCap(10.0, Pricer({MODEL: (3.0, 15.0)}))
    assert cap.try_reserve(1.0, assumed="m+reasoning")
    assert not cap.try_reserve(1.0, assumed="m+reasoning")  # one at a time until one settles
    assert cap.try_reserve(1.0, assumed="m+parts")  # another assumption is checked on its own
    assert cap.try_reserve(1.0)  # a bound the body sets itself is not held back
    cap.settle(1.0, 0.2)  # a reply, but of a bound that assumed nothing
    assert not cap.try_reserve(1.0, assumed="m+reasoning")
    cap.settle(1.0, 0.2, "m+reasoning")
    assert cap.calibrated == {"m+reasoning"} and cap.try_reserve(1.0, assumed="m+reasoning")
    assert cap.try_reserve(1.0, assumed="m+reasoning")
    cap.refund(1.0, "m+parts")  # not billed: the assumption is still unchecked, and free to be tried again
    assert cap.try_reserve(1.0, assumed="m+parts") and not cap.try_reserve(1.0, assumed="m+parts")

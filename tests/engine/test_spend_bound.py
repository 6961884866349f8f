"""The cap reserves what the wire body can cost: a property test over random request shapes, against a sender
that bills the most each body allows, and the cases of issue 36 one by one."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._core.call import Call, Outcome
from holysheep._engine.run import abatch
from holysheep._engine.spend import DEFAULT_OUTPUT_BOUND, Price, input_token_bound, output_token_bound
from holysheep.batch import estimate
from holysheep.types.chat import ChatCompletion

CASES = 200
MODEL = "priced-model"
PRICE = Price(MODEL, 3.0, 15.0)
PRICES = {MODEL: (PRICE.input_per_m, PRICE.output_per_m)}
BASE = {"model": MODEL, "prices": PRICES, "check_quota": False}  # nothing but the fake sender is asked
WORDS = ["weather", "city", "naïve", "中文", "emoji 🙂", "{\"json\": 1}", "x" * 40, "long " * 30]


def _text_bytes(value: Any) -> int:
    """UTF-8 bytes of every string in a JSON value (keys too): no byte-level tokenizer makes more tokens."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, dict):
        return sum(_text_bytes(k) + _text_bytes(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_text_bytes(v) for v in value)
    return 0


def _most_allowed(body: dict[str, Any]) -> tuple[int, int]:
    """What a server honouring *either* output limit could bill for ``body``: every prompt byte, outside the
    model name (a 4-token template per message), and the larger of the limits (the default bound without one)."""
    prompt = sum(_text_bytes(v) for k, v in body.items() if k != "model")  # values only: a field's name is no prompt
    messages = body.get("messages") or []
    limits = [body[k] for k in ("max_tokens", "max_completion_tokens") if isinstance(body.get(k), int)]
    completion = max(limits) if limits else DEFAULT_OUTPUT_BOUND
    return prompt + 4 * len(messages), completion * int(body.get("n") or 1)


class MostAllowedSender:
    """A batch Sender: plans on a real client, and answers every attempt with the most its body allows."""

    def __init__(self, client: AsyncClient, *, usage: Any = None) -> None:
        self._inner = client.sender()
        self.billed: list[float] = []
        self.bodies: list[dict[str, Any]] = []
        self._usage = usage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def attempt(self, call: Call) -> Outcome:
        body = json.loads(call.content or b"{}")  # the exact bytes on the wire
        self.bodies.append(body)
        prompt, completion = _most_allowed(body)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion} if self._usage is None else self._usage
        self.billed.append(PRICE.cost(prompt, completion))
        await asyncio.sleep(0)
        return Outcome(value=ChatCompletion.model_validate({
            "id": "c", "object": "chat.completion", "created": 0, "model": MODEL, "usage": usage,
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "answer"}}]}))


def _random_item(rng: random.Random) -> dict[str, Any]:
    item: dict[str, Any] = {"messages": [{"role": rng.choice(["user", "system"]),
                                          "content": " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))}
                                         for _ in range(rng.randint(1, 3))]}
    limits = [rng.randint(1, 400), rng.randint(1, 4000)]
    rng.shuffle(limits)
    if rng.random() < 0.5:
        item["max_tokens"] = limits[0]
    if rng.random() < 0.5:
        item["max_completion_tokens"] = limits[1]
    if rng.random() < 0.3:
        item["n"] = rng.randint(1, 3)
    if rng.random() < 0.3:
        item["tools"] = [{"type": "function", "function": {"name": "lookup", "description": " ".join(
            rng.choices(WORDS, k=rng.randint(1, 20))), "parameters": {"type": "object", "properties": {}}}}]
    if rng.random() < 0.3:
        item["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
            "type": "object", "description": " ".join(rng.choices(WORDS, k=rng.randint(1, 20)))}}}
    extra: dict[str, Any] = {}
    if rng.random() < 0.4:
        extra["system"] = " ".join(rng.choices(WORDS, k=rng.randint(5, 60)))
    if rng.random() < 0.2:
        extra["documents"] = [{"text": " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))}]
    if rng.random() < 0.2:
        extra[rng.choice(["max_tokens", "max_completion_tokens"])] = rng.randint(1, 5000)
    if extra:
        item["extra_body"] = extra
    return item


def _random_defaults(rng: random.Random) -> dict[str, Any]:
    """Batch keywords, as the CLI's options give them (--max-tokens is a max_tokens default)."""
    defaults: dict[str, Any] = {}
    if rng.random() < 0.5:
        defaults["max_tokens"] = rng.randint(1, 3000)
    if rng.random() < 0.2:
        defaults["temperature"] = rng.choice([0.0, 0.7])
    return defaults


def test_the_cap_holds_for_random_request_shapes_against_the_most_each_body_allows(
        caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(36)

    async def main() -> int:
        stopped = 0
        async with AsyncClient(api_key="hs-test", base_url="http://127.0.0.1:9/v1") as client:
            for _ in range(CASES):
                sender = MostAllowedSender(client)
                cap = rng.choice([0.005, 0.02, 0.1, 0.5])
                items = [_random_item(rng) for _ in range(rng.randint(1, 6))]
                results = await abatch(sender, items, {**BASE, "max_cost_usd": cap,
                                                       "concurrency": rng.randint(1, 4), **_random_defaults(rng)})
                assert sum(sender.billed) <= cap * (1 + 1e-9), (items, sender.bodies)
                assert results.stats.spent_usd == pytest.approx(sum(sender.billed))
                stopped += results.stats.stop_reason is not None
        return stopped

    with caplog.at_level(logging.WARNING, logger="holysheep.batch"):
        stopped = asyncio.run(main())
    assert 20 < stopped < 180, stopped  # the cap bit in many cases, not in all
    assert not [r for r in caplog.records if "more than the" in r.getMessage()]  # no reply passed its reservation


def _one(item: dict[str, Any], cap: float, **defaults: Any) -> MostAllowedSender:
    async def main() -> MostAllowedSender:
        async with AsyncClient(api_key="hs-test", base_url="http://127.0.0.1:9/v1") as client:
            sender = MostAllowedSender(client)
            await abatch(sender, [item] * 3, {**BASE, "max_cost_usd": cap,
                                              "concurrency": 1, **defaults})
            return sender

    return asyncio.run(main())


MESSAGES = [{"role": "user", "content": "hello"}]


def test_max_tokens_from_the_cli_beside_a_smaller_max_completion_tokens_reserves_the_larger() -> None:
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 4000, "max_completion_tokens": 5}
    assert output_token_bound(body) == (4000, True)
    cap = PRICE.cost(input_token_bound(body), 4000) * 1.5  # one item fits, two do not
    sender = _one({"messages": MESSAGES, "max_completion_tokens": 5}, cap, max_tokens=4000)
    assert len(sender.bodies) == 1 and sum(sender.billed) <= cap
    est = estimate([{"messages": MESSAGES, "max_completion_tokens": 5}], model=MODEL, max_tokens=4000)
    assert est.output_tokens_bound == 4000  # the dry run reads the same body


def test_extra_body_prompt_fields_count_towards_the_input_bound() -> None:
    system = "be brief " * 200
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 1, "system": system}
    assert input_token_bound(body) >= len(system)
    cap = PRICE.cost(input_token_bound(body), 1) * 1.5
    sender = _one({"messages": MESSAGES, "max_tokens": 1, "extra_body": {"system": system}}, cap)
    assert len(sender.bodies) == 1 and sum(sender.billed) <= cap
    est = estimate([{"messages": MESSAGES, "extra_body": {"system": system}}], model=MODEL, max_tokens=1)
    assert est.input_tokens_bound == input_token_bound(body)


def test_an_extra_body_max_tokens_is_the_bound_that_counts() -> None:
    est = estimate([{"messages": MESSAGES, "max_tokens": 5, "extra_body": {"max_tokens": 900}}], model=MODEL)
    assert est.output_tokens_bound == 900 and est.unbounded_items == 0


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    {"prompt_tokens": -50, "completion_tokens": -50, "total_tokens": -100},
], ids=["zero", "negative"])
def test_usage_that_cannot_be_true_counts_the_reservation_and_is_logged_once(
        usage: dict[str, int], caplog: pytest.LogCaptureFixture) -> None:
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 100}
    worst = PRICE.cost(input_token_bound(body), 100)
    cap = worst * 3.5  # three reservations fit

    async def main() -> tuple[MostAllowedSender, float]:
        async with AsyncClient(api_key="hs-test", base_url="http://127.0.0.1:9/v1") as client:
            sender = MostAllowedSender(client, usage=usage)
            results = await abatch(sender, [{"messages": MESSAGES}] * 10,
                                   {**BASE, "max_cost_usd": cap, "concurrency": 1,
                                    "max_tokens": 100})
            return sender, results.stats.spent_usd

    with caplog.at_level(logging.WARNING, logger="holysheep.batch"):
        sender, spent = asyncio.run(main())
    assert len(sender.bodies) == 3 and spent == pytest.approx(3 * worst)
    assert len([r for r in caplog.records if "cannot be true" in r.getMessage()]) == 1


def test_the_cli_dry_run_reads_the_body_the_run_sends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36: three lines with max_completion_tokens 5 and --max-tokens 4000 went out with both; the dry
    run said 15 output tokens."""
    from holysheep.batch.__main__ import main as cli_main

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "messages": MESSAGES, "max_completion_tokens": 5})
                           + "\n" for i in range(3)))
    args = [str(src), "--model", MODEL, "--max-tokens", "4000", "--price", f"{MODEL}=3,15", "--dry-run", "--json"]
    assert cli_main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["output_tokens_bound"] == 12000 and data["unbounded_items"] == 0

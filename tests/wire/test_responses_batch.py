"""Batches of Responses API requests (#44): OpenAI Batch lines whose ``url`` is ``/v1/responses``, alone or mixed
with chat and embeddings lines, through ``run_jsonl`` / ``holysheep batch`` and the Python batch API."""

from __future__ import annotations

import json
from pathlib import Path

from holysheep import Client
from holysheep.batch import estimate_jsonl, run_jsonl
from holysheep.testing import FakeServer
from holysheep.types.chat import ChatCompletion
from holysheep.types.responses import Response

KEY = "sk-test-responses-batch-0123"
LINES = [
    {"custom_id": "r", "method": "POST", "url": "/v1/responses",
     "body": {"model": "m", "input": "hello resp", "instructions": "x", "max_output_tokens": 20}},
    {"custom_id": "c", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "m", "messages": [{"role": "user", "content": "hello chat"}]}},
    {"custom_id": "e", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "emb"}},
]


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_file_mixing_urls_runs_each_line_on_its_endpoint_in_openai_s_output_shape(tmp_path: Path) -> None:
    src, dst = _write(tmp_path / "in.jsonl", LINES), tmp_path / "out.jsonl"
    with FakeServer(api_key=KEY) as server, Client(base_url=server.url, api_key=KEY) as client:
        report = run_jsonl(client, src, dst, output_format="openai", check_quota=False)
        paths = sorted(r.path for r in server.requests)
        sent = {r.path: r.body for r in server.requests}
    assert (report.succeeded, report.failed, report.bad_lines) == (3, 0, [])
    assert paths == ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"]
    assert sent["/v1/responses"] == LINES[0]["body"]  # type: ignore[index]
    out = {r["custom_id"]: r for r in map(json.loads, dst.read_text().splitlines())}
    assert {k: v["response"]["status_code"] for k, v in out.items()} == {"r": 200, "c": 200, "e": 200}
    body = out["r"]["response"]["body"]
    assert (body["object"], body["output"][0]["content"][0]["text"]) == ("response", "hello resp")
    assert out["c"]["response"]["body"]["object"] == "chat.completion" and out["r"]["error"] is None
    assert report.summary is not None and report.summary.completion_tokens > 0


def test_a_bad_responses_line_is_refused_with_its_line_number_before_any_request(tmp_path: Path) -> None:
    bad = {"custom_id": "x", "method": "POST", "url": "/v1/responses", "body": {"model": "m"}}
    src, dst = _write(tmp_path / "in.jsonl", [LINES[1], bad]), tmp_path / "out.jsonl"
    with FakeServer(api_key=KEY) as server, Client(base_url=server.url, api_key=KEY) as client:
        report = run_jsonl(client, src, dst, check_quota=False)
        assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    assert report.bad_lines == [(2, "a /v1/responses body needs 'input'.")]


def test_the_dry_run_bounds_a_responses_line_by_its_max_output_tokens(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [LINES[0]])
    est = estimate_jsonl(src, prices={"m": (1.0, 2.0)}, tokenizer="chars/4")
    assert (est.items, est.output_tokens_bound) == (1, 20)
    assert est.input_tokens == (len("x\nhello resp") + 3) // 4


def test_the_python_batch_api_takes_responses_lines_too() -> None:
    with FakeServer(api_key=KEY) as server, Client(base_url=server.url, api_key=KEY) as client:
        results = client.chat.completions.batch(LINES[:2], check_quota=False)
        assert isinstance(results[0].response, Response) and isinstance(results[1].response, ChatCompletion)
        assert results[0].response.output_text == "hello resp"
        items = client.responses.batch([{"custom_id": "a", "input": "one"}, "two"], model="m", check_quota=False)
        assert [(r.custom_id, r.response.output_text) for r in items] == [  # type: ignore[union-attr]
            ("a", "one"), (None, "two")]

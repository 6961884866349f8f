"""`--output-format openai`: result lines an OpenAI Batch output reader takes unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holysheep import Client
from holysheep.batch import run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer, Fault


def _lines(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"id-{i}", "method": "POST", "url": "/v1/chat/completions",
                                        "body": {"model": "gpt-4.1",
                                                 "messages": [{"role": "user", "content": f"p{i}"}]}}) + "\n"
                            for i in range(n)))
    return path


@pytest.fixture(autouse=True)
def _no_shared_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", "off")


def test_openai_lines_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, dst = _lines(tmp_path / "in.jsonl", 6), tmp_path / "out.jsonl"
    with FakeServer(faults=[None, Fault.status(400)]) as server:  # the second line fails for good
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--output-format", "openai",
                         "--concurrency", "1"]) == 1
        rows = [json.loads(x) for x in dst.read_text().splitlines()]
        assert [r["custom_id"] for r in rows] == [f"id-{i}" for i in range(6)]
        for r in rows:
            assert set(r) >= {"id", "custom_id", "response", "error"} and r["id"].startswith("batch_req_")
        ok = rows[0]
        assert ok["error"] is None and ok["response"]["status_code"] == 200
        assert ok["response"]["request_id"] and ok["response"]["body"]["object"] == "chat.completion"
        assert ok["response"]["body"]["choices"][0]["message"]["content"] == "p0"
        bad = rows[1]
        assert bad["response"]["status_code"] == 400 and bad["response"]["body"]["error"]["message"]
        assert bad["error"] is None  # as OpenAI: an HTTP error is a response with its status and body
        # a reader of OpenAI batch output parses the body as a chat completion unchanged
        from openai.types.chat import ChatCompletion

        assert ChatCompletion.model_validate(ok["response"]["body"]).choices[0].message.content == "p0"
        # --resume reads its own openai lines: only the failed line runs again
        n_before = len([q for q in server.requests if q.path.endswith("/chat/completions")])
        assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--output-format", "openai",
                         "--resume"]) == 0
        assert len([q for q in server.requests if q.path.endswith("/chat/completions")]) == n_before + 1
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert [r["response"]["status_code"] for r in rows] == [200] * 6


def test_connection_failure_is_an_error_object(tmp_path: Path) -> None:
    src, dst = _lines(tmp_path / "in.jsonl", 1), tmp_path / "out.jsonl"
    with Client(api_key="hs_test_0000000000000000", base_url="http://127.0.0.1:9/v1", max_retries=0) as client:
        report = run_jsonl(client, src, dst, output_format="openai", max_retries=0, check_quota=False,
                           outage_after_s=0.5)
    assert report.failed + report.not_run == 1
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    if rows:  # a line that failed (not left for --resume) carries an error object and no response
        assert rows[0]["response"] is None and rows[0]["error"]["code"] and rows[0]["error"]["message"]


def test_default_format_is_unchanged(tmp_path: Path) -> None:
    src, dst = _lines(tmp_path / "in.jsonl", 2), tmp_path / "out.jsonl"
    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        run_jsonl(client, src, dst)
    row = json.loads(dst.read_text().splitlines()[0])
    assert list(row)[:3] == ["custom_id", "request_hash", "response"]
    with pytest.raises(Exception, match="output_format"):
        run_jsonl(client, src, tmp_path / "o2.jsonl", output_format="anthropic")

"""OpenAI-format error lines carry the server's own error object (message, type, param, code), scrubbed of
the key, as OpenAI writes them; the SDK's explanation goes to the report and stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from holysheep.batch import run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer, RecordedRequest, Response

from .conftest import MODEL, sync_client

SERVER_ERROR = {"message": "Invalid value for 'temperature': must be at most 2.", "type": "invalid_request_error",
                "param": "temperature", "code": "invalid_value"}


def _refuse_hot(request: RecordedRequest) -> Response | None:
    if request.body.get("temperature", 0) > 2:
        return Response(400, {"error": SERVER_ERROR})
    return None


def _input(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    lines: list[dict[str, Any]] = [{"custom_id": "ok", "messages": [{"role": "user", "content": "hi"}]},
                                   {"custom_id": "hot", "messages": [{"role": "user", "content": "hi"}],
                                    "extra_body": {"temperature": 9}}]
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return src


def test_an_openai_error_line_is_the_servers_error(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    with FakeServer() as server, sync_client(server, max_retries=0) as client:
        server.on("POST", "/chat/completions", _refuse_hot)
        report = run_jsonl(client, _input(tmp_path), dst, model=MODEL, output_format="openai")
    rows = {row["custom_id"]: row for row in map(json.loads, dst.read_text().splitlines())}
    hot = rows["hot"]
    assert hot["error"] is None and hot["response"]["status_code"] == 400
    assert hot["response"]["body"] == {"error": SERVER_ERROR}  # exactly what the server sent
    assert [cid for cid, _ in report.errors] == ["hot"]
    assert "temperature" in report.errors[0][1] and report.errors[0][1] != SERVER_ERROR["message"]


def test_the_key_echoed_in_a_server_error_is_scrubbed(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    with FakeServer() as server, sync_client(server, max_retries=0) as client:
        key = server.api_key

        def echo(request: RecordedRequest) -> Response:
            return Response(400, {"error": {"message": f"bad key {key}", "type": "invalid_request_error",
                                            "param": f"p-{key}", "code": "c"}})

        server.on("POST", "/chat/completions", echo)
        run_jsonl(client, _input(tmp_path), dst, model=MODEL, output_format="openai")
    text = dst.read_text()
    assert key not in text and '"param": "p-' in text.replace('":"', '": "')


def test_the_cli_prints_the_sdk_explanation_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as server:
        server.on("POST", "/chat/completions", _refuse_hot)
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        dst = tmp_path / "out.jsonl"
        assert cli_main([str(_input(tmp_path)), "-o", str(dst), "--base-url", server.url, "--model", MODEL,
                         "--no-progress", "--output-format", "openai", "--max-retries", "0"]) == 1
    err = capsys.readouterr().err
    assert "holysheep batch: error: hot failed: " in err and "400" in err

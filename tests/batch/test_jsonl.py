"""JSONL files: format errors, duplicate ids, resume, a torn tail, the CLI, and kill -9 then --resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from holysheep import InvalidRequestError
from holysheep.batch import run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer

from .conftest import MODEL, chat_requests, sync_client


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _out(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _line(cid: str, text: str) -> dict[str, Any]:
    return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [{"role": "user", "content": text}], "max_tokens": 5}}


def test_format_errors_are_reported_by_line_and_do_not_stop_others(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [
        _line("a", "alpha"),
        {"custom_id": "b", "messages": [{"role": "user", "content": "beta"}]},
        "{not json",
        "",
        [1, 2],
        {"custom_id": "e", "url": "/v1/embeddings", "body": {}},
        {"messages": [{"role": "user", "content": "no id"}]},
    ])
    dst = tmp_path / "out.jsonl"
    with sync_client(server) as client:
        report = run_jsonl(client, src, dst, model=MODEL, concurrency=3)
    rows = {r["custom_id"]: r for r in _out(dst)}
    assert set(rows) == {"a", "b", "line-3", "line-5", "e", "line-7"}
    assert rows["a"]["response"]["choices"][0]["message"]["content"] == "alpha"
    assert rows["line-7"]["response"]["choices"][0]["message"]["content"] == "no id"
    for cid, lineno in (("line-3", 3), ("line-5", 5), ("e", 6)):
        err = rows[cid]["error"]
        assert err["type"] == "invalid_request_error" and f"line {lineno}" in err["message"]
        assert err["status_code"] is None
    assert [n for n, _ in report.bad_lines] == [3, 5, 6]
    assert (report.lines, report.succeeded, report.failed) == (6, 3, 3)
    assert len(chat_requests(server)) == 3


def test_duplicate_custom_ids_are_rejected_before_sending(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line("x", "1"), _line("y", "2"), _line("x", "3")])
    with sync_client(server) as client, pytest.raises(InvalidRequestError, match="'x' on lines 1, 3"):
        run_jsonl(client, src, tmp_path / "out.jsonl")
    assert server.requests == [] and not (tmp_path / "out.jsonl").exists()


def test_resume_skips_done_ids_and_cuts_a_torn_tail(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line(f"id{i}", f"t{i}") for i in range(10)])
    dst = tmp_path / "out.jsonl"
    done = [{"custom_id": f"id{i}", "response": {"previous": True}} for i in range(4)]
    dst.write_text("".join(json.dumps(d) + "\n" for d in done) + '{"custom_id": "id4", "resp')  # crash mid-line
    with sync_client(server) as client:
        with pytest.raises(InvalidRequestError, match="resume"):
            run_jsonl(client, src, dst)
        report = run_jsonl(client, src, dst, resume=True)
    rows = _out(dst)
    assert Counter(r["custom_id"] for r in rows) == Counter({f"id{i}": 1 for i in range(10)})
    assert (report.skipped, report.succeeded) == (4, 6)
    assert len(chat_requests(server)) == 6
    assert all(r["response"].get("previous") for r in rows[:4])


def test_cli_exit_status_and_json_report(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    src = _write(tmp_path / "in.jsonl", [_line("a", "1"), "oops"])
    dst = tmp_path / "out.jsonl"
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["succeeded"], data["failed"], data["bad_lines"][0][0]) == (1, 1, 2)
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url]) == 2  # exists, no --resume
    # --resume runs the failed (bad) line again: it fails again, so the exit status stays 1
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--resume", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["skipped"], data["rerun"], data["succeeded"], data["failed"]) == (1, 1, 0, 1)
    assert [r["custom_id"] for r in _out(dst)] == ["a", "line-2"]


def test_kill_9_mid_run_then_resume_gives_each_id_exactly_once(tmp_path: Path) -> None:
    n = 300
    src = _write(tmp_path / "in.jsonl", [_line(f"k{i}", f"text {i}") for i in range(n)])
    dst = tmp_path / "out.jsonl"
    with FakeServer(latency=0.05) as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key}
        cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", server.url,
               "--concurrency", "8", "--no-progress"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while (not dst.exists() or dst.read_text().count("\n") < 40) and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(10)
            if proc.stderr:
                proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        first = len(_out_lenient(dst))
        assert 40 <= first < n
        resumed = subprocess.run([*cmd, "--resume", "--json"], env=env, capture_output=True, text=True, timeout=60)
        assert resumed.returncode == 0, resumed.stderr
        report = json.loads(resumed.stdout)
    ids = Counter(r["custom_id"] for r in _out(dst))
    assert ids == Counter({f"k{i}": 1 for i in range(n)})
    assert report["skipped"] == first and report["succeeded"] == n - first


def _out_lenient(path: Path) -> list[str]:
    return [line for line in path.read_text().split("\n")[:-1]]


def test_import_holysheep_does_not_load_batch() -> None:
    code = "import sys, holysheep; print(any(m.startswith('holysheep.batch') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False", out.stderr


def test_quota_stop_leaves_unsent_lines_for_resume(tmp_path: Path) -> None:
    from holysheep.testing import Fault

    src = _write(tmp_path / "in.jsonl", [_line(f"q{i}", f"t{i}") for i in range(10)])
    dst = tmp_path / "out.jsonl"
    with FakeServer(faults=[None, None, Fault.quota_exhausted()]) as server, sync_client(server) as client:
        report = run_jsonl(client, src, dst, concurrency=1)
        assert (report.succeeded, report.failed, report.not_run, report.ok) == (2, 1, 7, False)
        assert report.summary is not None and "quota" in str(report.summary.stop_reason)
        rows = _out(dst)
        assert [r["custom_id"] for r in rows] == ["q0", "q1", "q2"]
        assert rows[2]["error"]["type"] == "insufficient_quota" and rows[2]["error"]["status_code"] == 429
        report = run_jsonl(client, src, dst, resume=True)
    assert (report.skipped, report.rerun, report.succeeded, report.failed, report.not_run) == (2, 1, 8, 0, 0)
    assert Counter(r["custom_id"] for r in _out(dst)) == Counter({f"q{i}": 1 for i in range(10)})

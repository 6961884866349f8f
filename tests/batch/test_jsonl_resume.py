"""JSONL resume: failures run again, one line per custom_id at the end, kill -9 at several points."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from holysheep.batch import run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.testing import FakeServer
from holysheep.testing._replies import DEFAULT_MODELS

from .conftest import MODEL, chat_requests, sync_client

LATE = "late-model"  # unknown to the first (strict) server, served by the second


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _out(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _line(cid: str, text: str, model: str = MODEL) -> dict[str, Any]:
    return {"custom_id": cid, "body": {"model": model, "messages": [{"role": "user", "content": text}],
                                       "max_tokens": 5}, "method": "POST", "url": "/v1/chat/completions"}


def _input(tmp_path: Path, n: int = 10, late: tuple[int, ...] = (3, 7)) -> Path:
    return _write(tmp_path / "in.jsonl", [_line(f"id{i}", f"t{i}", LATE if i in late else MODEL) for i in range(n)])


def test_resume_reruns_failed_lines_and_leaves_one_line_per_id(tmp_path: Path) -> None:
    src, dst = _input(tmp_path), tmp_path / "out.jsonl"
    with FakeServer(strict_models=True) as server, sync_client(server) as client:
        first = run_jsonl(client, src, dst, max_retries=0, concurrency=4)
    assert (first.succeeded, first.failed, first.skipped, first.rerun, first.not_run) == (8, 2, 0, 0, 0)
    rows = _out(dst)
    assert [r["custom_id"] for r in rows] == [f"id{i}" for i in range(10)]  # input order after compaction
    assert [r["custom_id"] for r in rows if "error" in r] == ["id3", "id7"]
    assert rows[3]["error"]["status_code"] == 404
    before = {r["custom_id"]: r["request_hash"] for r in rows}
    assert all(isinstance(h, str) and len(h) == 16 for h in before.values())

    with FakeServer(strict_models=True, models=[*DEFAULT_MODELS, LATE]) as server, sync_client(server) as client:
        again = run_jsonl(client, src, dst, resume=True, max_retries=0)
        assert sorted(r.body["messages"][0]["content"] for r in chat_requests(server)) == ["t3", "t7"]
    assert (again.skipped, again.rerun, again.succeeded, again.failed, again.not_run, again.ok) == (
        8, 2, 2, 0, 0, True)
    rows = _out(dst)
    assert [r["custom_id"] for r in rows] == [f"id{i}" for i in range(10)]
    assert all("response" in r and "error" not in r for r in rows)
    assert {r["custom_id"]: r["request_hash"] for r in rows} == before
    assert rows[3]["response"]["choices"][0]["message"]["content"] == "t3"
    assert not (tmp_path / "out.jsonl.lock").exists() and not (tmp_path / "out.jsonl.tmp").exists()


def test_cli_report_counts_skipped_rerun_and_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = _input(tmp_path), tmp_path / "out.jsonl"
    with FakeServer(strict_models=True) as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        args = [str(src), "-o", str(dst), "--base-url", server.url, "--max-retries", "0", "--no-progress"]
        assert cli_main(args) == 1
        capsys.readouterr()
        assert cli_main([*args, "--resume"]) == 1  # the model is still unknown: both fail again
        err = capsys.readouterr().err
        assert f"10/10 done (8 from an earlier run), 2 failed (2 ran again after failing before), 0 not run; " \
               f"results in {dst}\n" in err
        assert cli_main([*args, "--resume", "--json"]) == 1
        data = json.loads(capsys.readouterr().out)
    assert {k: data[k] for k in ("lines", "skipped", "rerun", "succeeded", "failed", "not_run")} == {
        "lines": 10, "skipped": 8, "rerun": 2, "succeeded": 0, "failed": 2, "not_run": 0}
    assert len(_out(dst)) == 10


# ------------------------------------------------------------------ kill -9, then --resume

_RUNNER = textwrap.dedent("""
    import os, signal, sys
    from holysheep import Client
    from holysheep.batch import _jsonl_output, run_jsonl

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    where = sys.argv[4]
    if where == "fsync":  # while compacting: temp file written, not yet renamed over the output
        _jsonl_output.os.fsync = die
    elif where == "replace":  # right before the atomic rename
        _jsonl_output.os.replace = die
    elif where == "unlock":  # compacted, lock file not yet removed
        _jsonl_output.OutputLock.release = die
    with Client(base_url=sys.argv[3], max_retries=0) as client:
        run_jsonl(client, sys.argv[1], sys.argv[2], concurrency=8, resume=True)
""")


def _resume_and_check(src: Path, dst: Path, server: FakeServer, n: int, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", server.url,
           "--no-progress", "--resume", "--json"]
    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    rows = _out(dst)
    assert Counter(r["custom_id"] for r in rows) == Counter({f"k{i}": 1 for i in range(n)})
    assert [r["custom_id"] for r in rows] == [f"k{i}" for i in range(n)]
    assert all("response" in r for r in rows)
    report: dict[str, Any] = json.loads(resumed.stdout)
    assert report["skipped"] + report["succeeded"] == n and report["failed"] == 0
    return report


@pytest.mark.parametrize("where", ["fsync", "replace", "unlock"])
def test_kill_9_while_compacting_then_resume(tmp_path: Path, where: str) -> None:
    n = 40
    src = _write(tmp_path / "in.jsonl", [_line(f"k{i}", f"text {i}") for i in range(n)])
    dst = tmp_path / "out.jsonl"
    with FakeServer() as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key}
        script = tmp_path / "runner.py"
        script.write_text(_RUNNER)
        proc = subprocess.run([sys.executable, str(script), str(src), str(dst), server.url, where], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        assert (tmp_path / "out.jsonl.lock").read_text().startswith("pid ")  # left behind by the dead run (unlocked)
        sent = len(chat_requests(server))
        assert sent == n
        report = _resume_and_check(src, dst, server, n, env)
        assert len(chat_requests(server)) == n  # nothing was sent twice
    assert report["skipped"] == n
    assert not (tmp_path / "out.jsonl.lock").exists()


@pytest.mark.parametrize("kill_after", [1, 25, 90])
def test_kill_9_mid_run_at_several_points_then_resume(tmp_path: Path, kill_after: int) -> None:
    n = 120
    src = _write(tmp_path / "in.jsonl", [_line(f"k{i}", f"text {i}") for i in range(n)])
    dst = tmp_path / "out.jsonl"
    with FakeServer(latency=0.03) as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key}
        cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", server.url,
               "--concurrency", "4", "--no-progress"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while (not dst.exists() or dst.read_bytes().count(b"\n") < kill_after) and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(10)
            if proc.stderr:
                proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        written = dst.read_bytes().count(b"\n")
        assert kill_after <= written < n
        report = _resume_and_check(src, dst, server, n, env)
    assert report["skipped"] == written and report["succeeded"] == n - written


def test_kill_9_leaves_a_torn_line_that_resume_cuts(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line(f"k{i}", f"text {i}") for i in range(6)])
    dst = tmp_path / "out.jsonl"
    with sync_client(server) as client:
        run_jsonl(client, src, dst)
        whole = dst.read_bytes()
        lines = whole.splitlines(keepends=True)
        dst.write_bytes(b"".join(lines[:3]) + lines[3][:17])  # as a kill mid-write leaves it
        (tmp_path / "out.jsonl.tmp").write_bytes(lines[0][:9])  # and a half-written compaction
        report = run_jsonl(client, src, dst, resume=True)
    assert (report.skipped, report.succeeded, report.rerun) == (3, 3, 0)
    assert [r["custom_id"] for r in _out(dst)] == [f"k{i}" for i in range(6)]
    assert not (tmp_path / "out.jsonl.tmp").exists()


def test_ctrl_c_exits_130_and_resume_completes(tmp_path: Path) -> None:
    n = 60
    src = _write(tmp_path / "in.jsonl", [_line(f"k{i}", f"text {i}") for i in range(n)])
    dst = tmp_path / "out.jsonl"
    with FakeServer(latency=0.05) as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key}
        cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", server.url,
               "--concurrency", "4", "--no-progress"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while (not dst.exists() or dst.read_bytes().count(b"\n") < 10) and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert err.endswith(f"holysheep batch: error: interrupted; finished lines are in {dst}. "
                            "Run again with --resume to continue.\n")
        assert not (tmp_path / "out.jsonl.lock").exists()
        rows = _out(dst)
        assert len({r["custom_id"] for r in rows}) == len(rows) and all("response" in r for r in rows)
        report = _resume_and_check(src, dst, server, n, env)
    assert report["skipped"] == len(rows)


def test_counts_when_a_resumed_batch_stops_early(tmp_path: Path) -> None:
    from holysheep.testing import Fault

    src = _write(tmp_path / "in.jsonl", [_line(f"q{i}", f"t{i}") for i in range(10)])
    dst = tmp_path / "out.jsonl"
    with FakeServer(faults=[None, None, Fault.quota_exhausted()]) as server, sync_client(server) as client:
        first = run_jsonl(client, src, dst, concurrency=1)
    assert (first.succeeded, first.failed, first.not_run) == (2, 1, 7)
    with FakeServer(faults=[Fault.unauthorized()]) as server, sync_client(server) as client:
        again = run_jsonl(client, src, dst, concurrency=1, resume=True)
        assert len(chat_requests(server)) == 1
    assert (again.lines, again.skipped, again.rerun, again.succeeded, again.failed, again.not_run) == (
        10, 2, 1, 0, 1, 7)
    rows = _out(dst)
    assert [r["custom_id"] for r in rows] == ["q0", "q1", "q2"] and rows[2]["error"]["status_code"] == 401
    with FakeServer() as server, sync_client(server) as client:
        last = run_jsonl(client, src, dst, resume=True)
    assert (last.skipped, last.rerun, last.succeeded, last.failed, last.not_run, last.ok) == (2, 1, 8, 0, 0, True)
    assert [r["custom_id"] for r in _out(dst)] == [f"q{i}" for i in range(10)]

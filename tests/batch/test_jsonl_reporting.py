"""What a batch reports: line errors, unfinished items, summary rate, progress text, the rich extra, exit 130."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from holysheep import APIStatusError, HolySheepError
from holysheep._engine.progress import describe, make_progress
from holysheep._engine.unfinished import is_unfinished
from holysheep.batch import (
    BatchCancelledError,
    BatchResult,
    BatchStats,
    BatchSummary,
    BatchUnfinishedError,
    JsonlReport,
    MissingExtraError,
    PlainProgress,
    arun_jsonl,
)
from holysheep.batch.__main__ import main as cli_main
from holysheep.batch._jsonl import _Writer
from holysheep.cli._batch_parser import build_parser
from holysheep.testing import FakeServer

from .conftest import MODEL, async_client, chat_requests, sync_client


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _ok(cid: str, text: str) -> dict[str, Any]:
    return {"custom_id": cid, "model": MODEL, "messages": [{"role": "user", "content": text}]}


# ------------------------------------------------------------------ one prefix, one line number

def test_bad_lines_have_one_prefix_and_one_line_number(tmp_path: Path, server: FakeServer,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path / "in.jsonl", [
        _ok("a", "x"),
        "",
        '{"a": 1 "b": 2}',
        {"custom_id": "e", "url": "/v1/completions", "body": {}},
        "[1, 2]",
    ])
    dst = tmp_path / "out.jsonl"
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--no-progress"]) == 1
    bad = [line for line in capsys.readouterr().err.splitlines() if "bad input" in line]
    assert bad == [
        "holysheep batch: error: bad input line 3: not valid JSON (Expecting ',' delimiter at column 9)",
        "holysheep batch: error: bad input line 4: url must be '/v1/chat/completions', '/v1/embeddings' or "
        "'/v1/responses', got '/v1/completions'.",
        "holysheep batch: error: bad input line 5: expected a JSON object, got list",
    ]
    errors = {r["custom_id"]: r["error"] for r in map(json.loads, dst.read_text().splitlines()) if "error" in r}
    assert errors["line-3"]["message"] == "line 3: not valid JSON (Expecting ',' delimiter at column 9)"
    assert errors["e"]["message"] == ("line 4: url must be '/v1/chat/completions', '/v1/embeddings' or "
                                      "'/v1/responses', got '/v1/completions'.")
    assert errors["line-5"]["message"] == "line 5: expected a JSON object, got list"
    assert {e["type"] for e in errors.values()} == {"invalid_request_error"}
    assert len(chat_requests(server)) == 1


# ------------------------------------------------------------------ unfinished items are left for --resume

class ItemUnfinishedError(HolySheepError):
    """Only named like the engine's "not finished because the batch stopped" error: a failure like any other."""


class _SubclassOfUnfinished(BatchUnfinishedError):
    pass


def test_unfinished_results_are_not_written(tmp_path: Path) -> None:
    report = JsonlReport("in", "out")
    out = io.StringIO()
    writer = _Writer(out, report, None)
    stopped = [
        BatchResult(0, "a", error=BatchCancelledError("cancelled"), attempts=1),
        BatchResult(1, "b", error=BatchUnfinishedError("outage", stop_reason="outage"), attempts=3),
        BatchResult(2, "c", error=_SubclassOfUnfinished("stopped", stop_reason="pause"), attempts=0),
    ]
    for result in stopped:
        assert is_unfinished(result)
        writer(result)
    assert (out.getvalue(), report.not_run, report.failed) == ("", 3, 0)
    failed = BatchResult(3, "d", error=RuntimeError("boom"), attempts=2)
    assert not is_unfinished(failed)
    writer(failed)
    assert json.loads(out.getvalue()) == {"custom_id": "d", "request_hash": None, "error": {
        "type": "RuntimeError", "status_code": None, "message": "boom", "error_class": "RuntimeError"}}
    assert (report.not_run, report.failed) == (3, 1)


def test_an_error_named_like_unfinished_is_a_failure() -> None:
    """The decision is by type (`BatchUnfinishedError`), not by a class name that happens to match."""
    report = JsonlReport("in", "out")
    out = io.StringIO()
    writer = _Writer(out, report, None)
    look_alike = BatchResult(0, "x", error=ItemUnfinishedError("a user's own error"), attempts=1)
    assert not is_unfinished(look_alike)
    writer(look_alike)
    assert json.loads(out.getvalue())["error"]["error_class"] == "ItemUnfinishedError"
    assert (report.not_run, report.failed) == (0, 1)


@pytest.mark.parametrize(("status", "attempts", "unfinished"), [
    (401, 0, True), (402, 0, True), (429, 0, True), (401, 1, False), (500, 0, False)])
def test_an_item_never_sent_after_a_stop_is_unfinished(status: int, attempts: int, unfinished: bool) -> None:
    error = APIStatusError(f"HTTP {status}", status_code=status)
    assert is_unfinished(BatchResult(0, "x", error=error, attempts=attempts)) is unfinished


# ------------------------------------------------------------------ summary and progress text

def test_requests_per_s_is_zero_without_requests() -> None:
    stats = BatchStats(total=5, done=5, failed=5, requests=0, started_at=100.0)
    stats.finished_at = 104.0
    summary = BatchSummary.from_stats(stats, 5)
    assert summary.requests_per_s == 0.0
    assert "wall 4.00 s, 0.0 req/s" in str(summary)
    stats.requests = 10
    assert BatchSummary.from_stats(stats, 5).requests_per_s == 2.5


def test_progress_shows_no_cost_while_unknown() -> None:
    stats = BatchStats(total=10, done=3, failed=1, requests=3, prompt_tokens=1000, completion_tokens=234,
                       started_at=0.0)
    stats.finished_at = 2.0
    assert describe(stats) == "3/10 done, 1 failed, 1.5 req/s, ETA 00:04, 1,234 tokens"
    stream = io.StringIO()
    PlainProgress(stream).close(stats)
    assert stream.getvalue() == "batch: 3/10 done, 1 failed, 1.5 req/s, ETA 00:04, 1,234 tokens\n"
    stats.cost_known, stats.cost_usd = True, 0.0123
    assert describe(stats) == "3/10 done, 1 failed, 1.5 req/s, ETA 00:04, 1,234 tokens, $0.0123"
    stopped = BatchStats(total=100, done=100, failed=100, requests=0, started_at=0.0)
    stopped.finished_at = 0.5  # a batch stopped early: every item ended, none was sent
    assert describe(stopped) == "100/100 done, 100 failed, 0.0 req/s, ETA 00:00, 0 tokens"


def test_rich_progress_without_rich_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, server: FakeServer) -> None:
    for name in ("rich", "rich.console", "rich.progress"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError) as info:
        make_progress("rich")
    assert str(info.value) == ("progress='rich' needs the rich package, which is not installed: "
                               "pip install 'holysheep[cli]' (or pass progress='plain').")
    assert isinstance(info.value, HolySheepError) and isinstance(info.value, ImportError)
    assert isinstance(make_progress(True), PlainProgress)
    with sync_client(server) as client, pytest.raises(MissingExtraError, match=r"holysheep\[cli\]"):
        client.chat.completions.batch(["hi"], model=MODEL, progress="rich")
    assert server.requests == []


# ------------------------------------------------------------------ --help

def test_batch_help_has_no_sphinx_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main

    text = build_parser().format_help()
    assert main(["batch", "--help"]) == 0
    shown = capsys.readouterr().out
    for raw in (text, shown):
        help_text = " ".join(raw.split())
        assert ":func:" not in help_text and "``" not in help_text and ":class:" not in help_text
        assert "Exit status: 0 every line succeeded;" in help_text
        assert "model for lines that do not name one (default deepseek-v3.2)" in help_text


# ------------------------------------------------------------------ the async runner

async def test_arun_jsonl_resume_reruns_failures(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [_ok("a", "1"), {"custom_id": "b", "model": "late", "prompt": "2"},
                                         _ok("c", "3")])
    dst = tmp_path / "out.jsonl"
    with FakeServer(strict_models=True) as server:
        async with async_client(server) as client:
            first = await arun_jsonl(client, src, dst, max_retries=0)
    assert (first.succeeded, first.failed, first.rerun) == (2, 1, 0)
    with FakeServer() as server:
        async with async_client(server) as client:
            again = await arun_jsonl(client, src, dst, resume=True)
        assert len(chat_requests(server)) == 1
    assert (again.skipped, again.rerun, again.succeeded, again.failed) == (2, 1, 1, 0)
    assert again.summary is not None and again.summary.succeeded == 1
    assert [json.loads(x)["custom_id"] for x in dst.read_text().splitlines()] == ["a", "b", "c"]


# ------------------------------------------------------------------ an uncaught BatchInterrupted exits 130

def _run_script(tmp_path: Path, code: str, **kwargs: Any) -> subprocess.Popen[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def test_uncaught_batch_interrupted_exits_130_and_flushes_files(tmp_path: Path) -> None:
    proc = _run_script(tmp_path, f"""
        from holysheep.batch import BatchInterrupted, BatchResults, BatchStats
        f = open({str(tmp_path / "kept.txt")!r}, "w")
        f.write("written before the interrupt")
        raise BatchInterrupted(BatchResults([], BatchStats()))
    """)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.endswith("holysheep._engine.results.BatchInterrupted: batch interrupted: 0 of 0 items finished\n")
    assert (tmp_path / "kept.txt").read_text() == "written before the interrupt"


def test_a_custom_excepthook_is_left_alone(tmp_path: Path) -> None:
    proc = _run_script(tmp_path, """
        import sys
        sys.excepthook = lambda *exc: print("my hook", exc[0].__name__)
        from holysheep.batch import BatchInterrupted, BatchResults, BatchStats
        raise BatchInterrupted(BatchResults([], BatchStats()))
    """)
    out, _err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (1, "my hook BatchInterrupted\n")


def test_ctrl_c_in_a_sync_batch_exits_130(tmp_path: Path) -> None:
    with FakeServer(latency=2.0) as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key}
        proc = _run_script(tmp_path, f"""
            from holysheep import Client
            with Client(base_url={server.url!r}) as client:
                client.chat.completions.batch(["a", "b", "c"], model={MODEL!r}, rpm=None, tpm=None)
        """, env=env)
        deadline = time.monotonic() + 30
        while len(chat_requests(server)) < 3 and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "BatchInterrupted: batch interrupted: 0 of 3 items finished" in err

"""Issue 45, items 1-5: the output file at the real boundary. ``-o`` names a regular file or a new path, nothing
else (exit 2 before any request, the thing named untouched); the lock and the temporary copy never go through a
link planted beside the output; two names for one file share one lock; a FIFO never blocks the run, and a
second SIGTERM always ends it; ``--resume`` reads the output in bounded pieces."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from holysheep import Client
from holysheep.batch import OutputLockedError, OutputNotResultsError, OutputPathError, _jsonl_output, run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.batch._jsonl_output import OutputLock, compact_output, read_output
from holysheep.batch._output_files import output_target
from holysheep.testing import FakeServer

MODEL = "gpt-4.1"
NO_NEWLINE = 48 << 20  # a file of 48 MiB with no newline (the was 1 GiB)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def _sent(server: FakeServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


def _input(tmp_path: Path, n: int = 3) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]})
                           + "\n" for i in range(n)))
    return src


def _cli(server: FakeServer, src: Path, dst: Path | str, *more: str) -> list[str]:
    return [str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--no-progress", *more]


def _client(server: FakeServer) -> Client:
    return Client(api_key=server.api_key, base_url=server.url)


# --- 1. -o names a regular file or a new path ---------------------------------------------------------------


def _odd(kind: str, tmp_path: Path) -> Path:
    dst = tmp_path / "out.jsonl"
    if kind == "link-to-dev-null":  # -o /dev/stdout and /proc/self/fd/1 are links like it
        dst.symlink_to("/dev/null")
    elif kind == "dangling-link":  # /proc/self/fd/1 when stdout is a pipe leads to "pipe:[N]", no file
        dst.symlink_to(tmp_path / "pipe:[1234]")
    elif kind == "link-to-folder":
        (tmp_path / "folder").mkdir()
        dst.symlink_to(tmp_path / "folder")
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(dst))
        sock.close()
    elif kind == "hard-link":
        (tmp_path / "other.jsonl").write_text("")
        os.link(tmp_path / "other.jsonl", dst)
    return dst


@pytest.mark.parametrize("kind", ["link-to-dev-null", "dangling-link", "link-to-folder", "socket", "hard-link"])
def test_o_that_is_not_a_regular_file_exits_2_before_any_request(kind: str, tmp_path: Path, server: FakeServer,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    dst = _odd(kind, tmp_path)
    before = os.lstat(dst)
    assert cli_main(_cli(server, _input(tmp_path), dst)) == 2
    err = capsys.readouterr().err
    assert f"the output path {dst} " in err and "-o -" in err, err
    after = os.lstat(dst)  # the link, socket or file is still what it was: nothing replaced it
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert _sent(server) == 0 and not (tmp_path / "out.jsonl.lock").exists()
    assert Path("/dev/null").is_char_device()


def test_dev_null_itself_is_refused_without_writing_anything() -> None:
    """``-o /dev/null`` is refused by the same check (which reads, never writes: safe to call as root)."""
    with pytest.raises(OutputPathError, match=r"/dev/null is a character device.*-o - > /dev/null"):
        output_target(Path("/dev/null"))
    assert Path("/dev/null").is_char_device()


def test_a_fifo_nobody_reads_is_refused_at_once(tmp_path: Path, server: FakeServer) -> None:
    """The issue's run blocked in open() for 12 minutes; a subprocess, so a regression fails instead of hanging."""
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key, "HOLYSHEEP_LIMITS_DIR": "off"}
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "holysheep.batch", *_cli(server, _input(tmp_path), fifo)],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "is a FIFO (named pipe)" in out.stderr and _sent(server) == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and time.monotonic() - start < 30


def test_a_second_stop_signal_ends_the_process() -> None:
    """The first SIGTERM stops the run like Ctrl-C; while it winds down, a second one is the signal's default
    action (the process ends), never ignored."""
    from holysheep.cli._batch_signals import StopSignal, stop_signals

    with stop_signals():
        with pytest.raises(StopSignal):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # (the handler raises here at once)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_link_to_a_regular_file_is_followed_once_and_stays_a_link(tmp_path: Path, server: FakeServer) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("")
    name = tmp_path / "name.jsonl"
    name.symlink_to(real)
    with _client(server) as client:
        report = run_jsonl(client, _input(tmp_path), name, model=MODEL, resume=True)
    assert report.succeeded == 3 and name.is_symlink() and os.readlink(name) == str(real)
    assert [json.loads(x)["custom_id"] for x in real.read_text().splitlines()] == ["c0", "c1", "c2"]
    from holysheep.batch import estimate_jsonl  # a dry run reads the output through the link as the run does

    assert estimate_jsonl(_input(tmp_path), output_path=name, resume=True, model=MODEL).skipped == 3


# --- 2. nothing planted beside the output is followed ----------------------------------------------------


@pytest.mark.parametrize("beside", ["lock-link", "tmp-link", "lock-hard-link"])
def test_a_link_planted_beside_the_output_is_not_followed(beside: str, tmp_path: Path, server: FakeServer,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    dst = tmp_path / "out.jsonl"
    planted = tmp_path / ("out.jsonl.tmp" if beside == "tmp-link" else "out.jsonl.lock")
    if beside == "lock-hard-link":
        os.link(victim, planted)
    else:
        planted.symlink_to(victim)
    assert cli_main(_cli(server, _input(tmp_path), dst)) == 2
    err = capsys.readouterr().err
    assert str(planted) in err and "Remove it" in err, err
    assert victim.read_bytes() == b"precious\n" and _sent(server) == 0
    assert beside == "lock-hard-link" or planted.is_symlink()
    assert not dst.exists() or not dst.is_symlink()


def test_a_link_planted_at_the_temporary_copy_during_the_run_is_not_followed(tmp_path: Path,
                                                                            server: FakeServer) -> None:
    """Planted after the start (past the first check): the compaction refuses it, the results stay as appended."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    dst = tmp_path / "out.jsonl"

    def plant(result: object) -> None:
        if not (tmp_path / "out.jsonl.tmp").is_symlink():
            (tmp_path / "out.jsonl.tmp").symlink_to(victim)

    with _client(server) as client:
        report = run_jsonl(client, _input(tmp_path), dst, model=MODEL, on_result=plant)
    assert report.succeeded == 3 and report.compaction_error is not None
    assert "is a symbolic link" in report.compaction_error
    assert victim.read_bytes() == b"precious\n" and not dst.is_symlink()
    assert sorted(json.loads(x)["custom_id"] for x in dst.read_text().splitlines()) == ["c0", "c1", "c2"]


# --- 3. two names for one file share one lock ------------------------------------------------------------


@pytest.mark.parametrize("via", ["file-link", "folder-link"])
def test_a_second_run_through_another_name_of_the_output_is_refused(via: str, tmp_path: Path,
                                                                    server: FakeServer) -> None:
    real = tmp_path / "data" / "out.jsonl"
    real.parent.mkdir()
    real.write_text("")
    if via == "file-link":
        other = tmp_path / "alias.jsonl"
        other.symlink_to(real)
    else:
        (tmp_path / "alias").symlink_to(real.parent)
        other = tmp_path / "alias" / "out.jsonl"
    with OutputLock(output_target(real)), _client(server) as client, \
            pytest.raises(OutputLockedError, match=f"pid {os.getpid()}"):  # the first run holds its output
        run_jsonl(client, _input(tmp_path), other, model=MODEL, resume=True)
    assert _sent(server) == 0 and real.read_text() == ""
    assert via == "folder-link" or other.is_symlink()


def test_two_runs_one_through_a_link_send_each_line_once(tmp_path: Path, server: FakeServer) -> None:
    """The issue's case: a second run starts on a link to the output while the first runs (from the first's
    ``on_result``, so it is surely running): it is refused, and the lines go out once."""
    real, link = tmp_path / "out.jsonl", tmp_path / "link.jsonl"
    real.write_text("")
    link.symlink_to(real)
    src = _input(tmp_path, 4)
    refused: list[BaseException] = []

    def second_run(result: object) -> None:
        if not refused:
            with _client(server) as other:
                try:
                    run_jsonl(other, src, link, model=MODEL, resume=True)
                except OutputLockedError as exc:
                    refused.append(exc)

    with _client(server) as client:
        report = run_jsonl(client, src, real, model=MODEL, resume=True, concurrency=1, on_result=second_run)
    assert len(refused) == 1 and report.succeeded == 4 and _sent(server) == 4
    assert link.is_symlink() and len(real.read_text().splitlines()) == 4


# --- 5. --resume reads in bounded pieces -----------------------------------------------------------------


def _peak(fn: object) -> int:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_resume_refuses_a_huge_file_with_no_newline_from_its_first_bytes(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    with dst.open("wb") as f:
        f.truncate(NO_NEWLINE)  # NUL bytes, no newline

    def resume() -> None:
        with pytest.raises(OutputNotResultsError, match="line 1 is not a result line"):
            read_output(dst)

    assert _peak(resume) < 4 << 20 and dst.stat().st_size == NO_NEWLINE


def test_a_long_line_that_is_no_result_line_is_refused_with_bounded_memory(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jsonl_output, "MAX_PARSED_LINE", 2 << 20)
    dst = tmp_path / "out.jsonl"
    dst.write_bytes(b'{"note": "' + b"x" * (16 << 20) + b'"}\n')
    def resume() -> None:
        with pytest.raises(OutputNotResultsError, match="line 1 is longer than 2 MiB and not a result line"):
            read_output(dst)

    assert _peak(resume) < 8 << 20


@pytest.mark.parametrize("fmt", ["holysheep", "openai"])
def test_a_result_line_longer_than_the_bound_is_read_by_its_head_and_copied_whole(
        fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jsonl_output, "MAX_PARSED_LINE", 1 << 20)
    body = {"id": "x", "choices": [{"message": {"content": "y" * (24 << 20)}}]}
    if fmt == "holysheep":
        long = '{"custom_id":"big","request_hash":"aa","response":' + json.dumps(body) + "}\n"
        small = '{"custom_id":"small","request_hash":"bb","error":{"type":"x"}}\n'
    else:
        long = ('{"id":"batch_req_1","custom_id":"big","request_hash":"aa","response":{"status_code":200,'
                '"request_id":null,"body":' + json.dumps(body) + '},"error":null}\n')
        small = ('{"id":"batch_req_2","custom_id":"small","request_hash":"bb","response":{"status_code": 429, '
                 '"request_id": null, "body": {}},"error":null}\n')
    dst = tmp_path / "out.jsonl"
    dst.write_text(small + long)
    assert _peak(lambda: read_output(dst, fmt)) < 8 << 20
    got = read_output(dst, fmt)
    assert {cid: (p.ok, p.request_hash) for cid, p in got.items()} == {"big": (True, "aa"), "small": (False, "bb")}
    assert compact_output(dst, ["big", "small"]) == 2
    assert dst.read_text() == long + small

"""A full disk and other output trouble (issue 31, item 9), on a small tmpfs (root only; skipped otherwise)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from holysheep import Client, InvalidRequestError
from holysheep.batch import OutputWriteError, run_jsonl

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, fixed

PAD = "x" * 3000
COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": PAD},
                                      "finish_reason": "stop"}]}).encode()


async def _ok(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(fixed(200, COMPLETION))


def _input(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"r{i}", "messages": MESSAGES}) + "\n" for i in range(n)))
    return path


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _complete_lines(path: Path) -> list[dict[str, object]]:
    rows = []
    for line in path.read_bytes().split(b"\n"):
        with contextlib.suppress(ValueError):  # a torn tail
            rows.append(json.loads(line))
    return rows


def test_results_that_do_not_fit_raise_a_typed_error_naming_the_path(tmp_path: Path, small_disk: Path) -> None:
    src, dst = _input(tmp_path / "in.jsonl", 40), small_disk / "out.jsonl"
    with HostileServer(_ok) as srv, Client(api_key=KEY, base_url=srv.url) as client, \
            pytest.raises(OutputWriteError) as info:
        run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False)
    assert str(dst) in str(info.value) and "--resume" in str(info.value) and "No space left" in str(info.value)
    rows = _complete_lines(dst)
    assert rows and all(r["response"] for r in rows)  # what was written is intact
    assert sorted(p.name for p in small_disk.iterdir()) == ["out.jsonl"]  # no .tmp, no lock


def test_results_that_fit_but_whose_compaction_does_not_end_well(tmp_path: Path, small_disk: Path) -> None:
    src, dst = _input(tmp_path / "in.jsonl", 12), small_disk / "out.jsonl"
    with HostileServer(_ok) as srv, Client(api_key=KEY, base_url=srv.url) as client:
        report = run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False)
        assert report.succeeded == 12 and report.compaction_error is not None
        assert "--resume" in report.compaction_error
        assert sorted(p.name for p in small_disk.iterdir()) == ["out.jsonl"]
        again = run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False, resume=True)
        assert again.skipped == 12 and again.ok  # the rerun reads the appended results; nothing is sent again
        assert len(srv.requests) == 12
    assert sorted(r["custom_id"] for r in _complete_lines(dst)) == sorted(f"r{i}" for i in range(12))


def test_python_m_batch_prints_one_line_and_exit_1_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    src, dst = _input(tmp_path / "in.jsonl", 40), small_disk / "out.jsonl"
    with HostileServer(_ok) as srv:
        proc = subprocess.run([sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url",
                               srv.url, "--model", "m", "--concurrency", "1", "--no-progress"],
                              env={**os.environ, "HOLYSHEEP_API_KEY": KEY}, capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"could not write results to {dst}" in proc.stderr and "--resume" in proc.stderr


def test_an_output_path_that_is_a_folder_says_so(tmp_path: Path) -> None:
    src = _input(tmp_path / "in.jsonl", 1)
    folder = tmp_path / "results"
    folder.mkdir()
    with Client(api_key=KEY, base_url="http://127.0.0.1:9/v1") as client, \
            pytest.raises(InvalidRequestError, match="is a folder: name a file in it"):
        run_jsonl(client, src, folder, model="m", check_quota=False)

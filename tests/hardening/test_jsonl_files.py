"""Files that fight back (issue 31, items 7 and 8): the output lock, odd input, input that grows."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from holysheep import Client
from holysheep.batch import OutputLockedError, run_jsonl
from holysheep.batch._jsonl_output import OutputLock

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, fixed

COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                      "finish_reason": "stop"}]}).encode()


async def _ok(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(fixed(200, COMPLETION))


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- 7. the output lock -----------------------------------------------------------------------------------


def test_a_lock_left_by_a_killed_run_whose_pid_is_alive_again_is_taken(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [{"custom_id": "a", "messages": MESSAGES}])
    dst = tmp_path / "out.jsonl"
    dst.write_text("")
    (tmp_path / "out.jsonl.lock").write_text("1\n")  # pid 1 is alive (init, or the container's first process)
    with HostileServer(_ok) as srv, Client(api_key=KEY, base_url=srv.url) as client:
        report = run_jsonl(client, src, dst, model="m", resume=True, check_quota=False)
    assert report.succeeded == 1
    assert not (tmp_path / "out.jsonl.lock").exists()


def test_a_lock_held_by_a_live_run_is_refused_with_its_pid_and_host(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    with OutputLock(dst):
        with pytest.raises(OutputLockedError) as info:
            OutputLock(dst).acquire()
        assert f"pid {os.getpid()}" in str(info.value)
        assert os.uname().nodename in str(info.value)
    with OutputLock(dst):  # released: free again
        pass


def test_runs_racing_for_a_stale_lock_never_both_take_it(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    lock_path = tmp_path / "out.jsonl.lock"
    racers = 6
    for trial in range(40):
        lock_path.write_text("999999999\n")  # stale: no such process
        barrier = threading.Barrier(racers)
        winners: list[OutputLock] = []
        done = threading.Barrier(racers + 1)

        def race(barrier: threading.Barrier = barrier, winners: list[OutputLock] = winners,
                 done: threading.Barrier = done) -> None:
            lock = OutputLock(dst)
            barrier.wait()
            try:
                lock.acquire()
                winners.append(lock)
            except OutputLockedError:
                pass
            done.wait()  # hold the lock until every racer has tried

        threads = [threading.Thread(target=race) for _ in range(racers)]
        for t in threads:
            t.start()
        done.wait()
        for t in threads:
            t.join()
        assert len(winners) == 1, f"trial {trial}: {len(winners)} runs took the lock"
        winners[0].release()


# --- 8. odd input ---------------------------------------------------------------------------------------


def test_a_lone_surrogate_is_one_bad_line_named_by_its_number(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [
        {"custom_id": "a", "messages": MESSAGES},
        '{"custom_id": "b", "messages": [{"role": "user", "content": "\\ud800"}]}',
        {"custom_id": "c", "messages": MESSAGES},
    ])
    dst = tmp_path / "out.jsonl"
    with HostileServer(_ok) as srv, Client(api_key=KEY, base_url=srv.url) as client:
        report = run_jsonl(client, src, dst, model="m", check_quota=False)
        assert len(srv.requests) == 2
    rows = {r["custom_id"]: r for r in _rows(dst)}
    assert "error" not in rows["a"] and "error" not in rows["c"]
    assert "line 2" in rows["b"]["error"]["message"] and "surrogate" in rows["b"]["error"]["message"]
    assert [n for n, _ in report.bad_lines] == [2]


def test_lines_appended_during_a_run_are_not_sent(tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [{"custom_id": f"r{i}", "messages": MESSAGES} for i in range(5)])
    dst = tmp_path / "out.jsonl"
    appended = threading.Event()

    def grow(result: Any) -> None:
        if not appended.is_set():
            appended.set()
            with src.open("a") as f:  # a new line, and one that reuses an earlier custom_id
                f.write(json.dumps({"custom_id": "late", "messages": MESSAGES}) + "\n")
                f.write(json.dumps({"custom_id": "r0", "messages": [{"role": "user", "content": "other"}]}) + "\n")

    with HostileServer(_ok) as srv, Client(api_key=KEY, base_url=srv.url) as client:
        report = run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False, on_result=grow)
        assert len(srv.requests) == 5
        assert report.lines == 5 and report.succeeded == 5
        assert [r["custom_id"] for r in _rows(dst)] == [f"r{i}" for i in range(5)]

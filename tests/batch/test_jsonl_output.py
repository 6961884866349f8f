"""The output belongs to its input: request hashes, -o equal to the input, the lock file; default model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from holysheep import InvalidRequestError
from holysheep.batch import OutputLockedError, OutputMismatchError, run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.batch._jsonl_output import OutputLock
from holysheep.testing import FakeServer

from .conftest import MODEL, chat_requests, sync_client


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _line(cid: str | None, text: str) -> dict[str, Any]:
    line: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    if cid is not None:
        line["custom_id"] = cid
    return line


def test_resume_with_a_changed_line_is_refused_before_sending(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line(f"c{i}", f"t{i}") for i in range(4)])
    dst = tmp_path / "out.jsonl"
    with sync_client(server) as client:
        run_jsonl(client, src, dst)
        before = dst.read_bytes()
        # the same request written differently (key order, spacing) is the same input
        _write(src, [json.dumps(_line(f"c{i}", f"t{i}"), indent=None, separators=(", ", " : "), sort_keys=True)
                     for i in range(4)])
        assert run_jsonl(client, src, dst, resume=True).skipped == 4
        _write(src, [_line(f"c{i}", "changed" if i == 2 else f"t{i}") for i in range(4)])
        sent = len(chat_requests(server))
        with pytest.raises(OutputMismatchError) as info:
            run_jsonl(client, src, dst, resume=True)
        assert len(chat_requests(server)) == sent
    assert str(info.value) == (
        f"{dst} holds results for a different input than {src}: 1 line(s) changed since their results were "
        "written (first: 'c2' (line 3)). To send the changed lines again (their old results are replaced, the "
        "others kept), pass --rerun-changed (rerun_changed=True) with --resume; or use a new output file, or "
        "overwrite=True (--overwrite) to start again. Nothing was sent.")
    assert isinstance(info.value, InvalidRequestError) and info.value.field == "output_path"
    assert dst.read_bytes() == before
    assert not (tmp_path / "out.jsonl.lock").exists()


def test_resume_with_another_file_of_line_n_ids_is_refused(tmp_path: Path, server: FakeServer,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    first = _write(tmp_path / "a.jsonl", [_line(None, f"a{i}") for i in range(3)])
    other = _write(tmp_path / "b.jsonl", [_line(None, f"b{i}") for i in range(3)])
    shorter = _write(tmp_path / "c.jsonl", [_line(None, f"a{i}") for i in range(2)])
    dst = tmp_path / "out.jsonl"
    with sync_client(server) as client:
        run_jsonl(client, first, dst)
        with pytest.raises(OutputMismatchError, match=r"3 line\(s\) changed .*\(first: 'line-1' \(line 1\)\)"):
            run_jsonl(client, other, dst, resume=True)
        with pytest.raises(OutputMismatchError, match=f"results for 1 custom_id\\(s\\) that {shorter} does not "
                                                      "contain \\(first: 'line-3'\\)"):
            run_jsonl(client, shorter, dst, resume=True)
    assert len(chat_requests(server)) == 3
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    assert cli_main([str(other), "-o", str(dst), "--base-url", server.url, "--resume", "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"holysheep batch: error: {dst} holds results for a different input")
    # --overwrite starts again with the new input
    assert cli_main([str(other), "-o", str(dst), "--base-url", server.url, "--overwrite", "--no-progress"]) == 0
    assert [json.loads(x)["response"]["choices"][0]["message"]["content"]
            for x in dst.read_text().splitlines()] == ["b0", "b1", "b2"]


def test_output_equal_to_input_is_refused(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line("x", "1")])
    before = src.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    with sync_client(server) as client:
        for out in (src, tmp_path / "sub" / ".." / "in.jsonl", link):
            with pytest.raises(InvalidRequestError) as info:
                run_jsonl(client, src, out, overwrite=True)
            assert str(info.value) == (f"the output file is the input file ({src}): results would overwrite the "
                                       "requests. Pass a different output path (-o).")
        with pytest.raises(InvalidRequestError) as info:
            run_jsonl(client, src, tmp_path / "missing" / "out.jsonl")
        assert str(info.value) == (f"the folder of the output file {tmp_path / 'missing' / 'out.jsonl'} does not "
                                   "exist: create it first.")
    assert src.read_bytes() == before and server.requests == []


def test_a_second_run_on_the_same_output_is_locked_out(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line("x", "1")])
    dst = tmp_path / "out.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from holysheep.batch._jsonl_output import OutputLock; "
                               "OutputLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)",
                               str(dst)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with sync_client(server) as client, pytest.raises(OutputLockedError) as info:
            run_jsonl(client, src, dst)
        held = (tmp_path / "out.jsonl.lock").read_text()
    finally:
        holder.kill()
        holder.communicate()  # waits, and closes its stdout pipe (left open, it is a ResourceWarning at GC)
    assert str(info.value).startswith(f"another run (pid {holder.pid} on host {socket.gethostname()}, started ")
    assert str(info.value).endswith(") is writing out.jsonl: wait for it to finish, or use a different output file.")
    assert server.requests == [] and not dst.exists()
    assert held.startswith(f"pid {holder.pid} ")  # not ours to remove
    with sync_client(server) as client:  # its process is gone: the OS lock went with it
        assert run_jsonl(client, src, dst).succeeded == 1


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path, server: FakeServer) -> None:
    src = _write(tmp_path / "in.jsonl", [_line("x", "1"), _line("y", "2")])
    dst = tmp_path / "out.jsonl"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "out.jsonl.lock").write_text(f"{dead.pid}\n")
    with sync_client(server) as client:
        report = run_jsonl(client, src, dst)
    assert (report.succeeded, report.failed) == (2, 0)
    assert not (tmp_path / "out.jsonl.lock").exists()


def test_lock_is_exclusive_within_one_process_and_released(tmp_path: Path) -> None:
    dst = tmp_path / "out.jsonl"
    with OutputLock(dst) as lock:
        assert lock.path.read_text().startswith(f"pid {os.getpid()} on host ")
        with pytest.raises(OutputLockedError, match=f"pid {os.getpid()}"):
            OutputLock(dst).acquire()
    assert not lock.path.exists()
    lock.path.write_text("")  # a file nobody holds (whatever it says) is free
    with OutputLock(dst):
        pass


def test_cli_uses_the_chat_default_model(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep.cli._chat import DEFAULT_MODEL

    src = _write(tmp_path / "in.jsonl", [{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]},
                                         {"custom_id": "b", "model": "gpt-4.1-mini", "prompt": "yo"}])
    dst = tmp_path / "out.jsonl"
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--no-progress"]) == 0
    assert sorted(r.body["model"] for r in chat_requests(server)) == sorted([DEFAULT_MODEL, "gpt-4.1-mini"])
    assert DEFAULT_MODEL == "deepseek-v3.2"
    assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--no-progress", "--overwrite",
                     "--model", "gpt-4.1"]) == 0
    assert sorted(r.body["model"] for r in chat_requests(server)[2:]) == ["gpt-4.1", "gpt-4.1-mini"]


def test_read_output_takes_the_last_line_per_id_in_both_line_shapes(tmp_path: Path) -> None:
    from holysheep.batch._jsonl_output import PriorResult, compact_output, read_output

    out = tmp_path / "out.jsonl"
    out.write_bytes(
        b'{"custom_id":"a","request_hash":"h1","error":{"type":"x"}}\n'
        b'{"custom_id": "b", "response": {"id": 1}}\n'  # written by an older version: no hash
        b'{"error": {"type": "y"}, "custom_id": "c", "request_hash": "h3"}\n'
        b'{"custom_id":"a","request_hash":"h1","response":{"id":2}}\n'
        b'{"custom_id":"\\u00e9\\"q","request_hash":null,"error":{}}\n'
        b'{"custom_id":"d","request_hash":"h4","resp')  # torn
    assert read_output(out) == {"a": PriorResult(True, "h1"), "b": PriorResult(True, None),
                                "c": PriorResult(False, "h3"), 'é"q': PriorResult(False, None)}
    assert out.read_bytes().endswith(b'"error":{}}\n')  # the torn tail is cut
    with out.open("ab") as f:
        f.write(b"not json\n")  # compaction keeps a line it cannot read (resume refuses such a file)
    assert compact_output(out, ["c", "b", "a", "zz"]) == 5
    assert out.read_bytes().splitlines() == [
        b'{"error": {"type": "y"}, "custom_id": "c", "request_hash": "h3"}',
        b'{"custom_id": "b", "response": {"id": 1}}',
        b'{"custom_id":"a","request_hash":"h1","response":{"id":2}}',
        b'{"custom_id":"\\u00e9\\"q","request_hash":null,"error":{}}',
        b"not json",
    ]

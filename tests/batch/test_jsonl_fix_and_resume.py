"""Fix-and-resume: a bad line fixed after a run is simply run by `--resume`; a line changed after it
succeeded is refused (the message names --rerun-changed) or, with `--rerun-changed`, sent again and its old
result replaced."""

from __future__ import annotations

import json
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


def _line(cid: str, text: str, **more: Any) -> dict[str, Any]:
    return {"custom_id": cid, "messages": [{"role": "user", "content": text}], **more}


def _rows(dst: Path) -> dict[str, dict[str, Any]]:
    return {row["custom_id"]: row for row in map(json.loads, dst.read_text().splitlines())}


def _sent_texts(server: FakeServer) -> list[str]:
    return [r.body["messages"][0]["content"] for r in chat_requests(server)]


@pytest.mark.parametrize("bad", ['{"custom_id": "c1", "messages": [', _line("c1", "t1", temperature=9)],
                         ids=["bad-json", "temperature-9"])
def test_a_fixed_bad_line_is_simply_run_by_resume(bad: Any, tmp_path: Path, server: FakeServer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src, [_line("c0", "t0"), bad, _line("c2", "t2")])
    args = [str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--no-progress"]
    assert cli_main(args) == 1
    failed = "line-2" if isinstance(bad, str) else "c1"  # bad JSON has no readable custom_id
    assert "error" in _rows(dst)[failed] and sorted(_sent_texts(server)) == ["t0", "t2"]
    _write(src, [_line("c0", "t0"), _line("c1", "fixed"), _line("c2", "t2")])
    assert cli_main([*args, "--resume"]) == 0
    assert sorted(_sent_texts(server)) == ["fixed", "t0", "t2"]  # only the fixed line went out again
    rows = _rows(dst)  # the fixed line's result replaced its error line
    assert list(rows) == ["c0", "c1", "c2"] and all("response" in r for r in rows.values())


def test_a_changed_line_that_succeeded_needs_rerun_changed(tmp_path: Path, server: FakeServer,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src, [_line(f"c{i}", f"t{i}") for i in range(4)])
    args = [str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--no-progress"]
    assert cli_main(args) == 0
    old = _rows(dst)
    _write(src, [_line(f"c{i}", "changed" if i == 2 else f"t{i}") for i in range(4)])
    before = dst.read_bytes()
    assert cli_main([*args, "--resume"]) == 2
    assert "--rerun-changed" in capsys.readouterr().err and dst.read_bytes() == before
    assert cli_main([*args, "--rerun-changed"]) == 2  # it needs --resume
    err = capsys.readouterr().err
    assert "--rerun-changed needs --resume" in err and "resume=True" not in err
    assert cli_main([*args, "--resume", "--rerun-changed", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["skipped"], report["rerun"], report["succeeded"]) == (3, 1, 1)
    sent = _sent_texts(server)
    assert sorted(sent[:4]) == ["t0", "t1", "t2", "t3"] and sent[4:] == ["changed"]  # only the changed line again
    rows = _rows(dst)
    assert list(rows) == ["c0", "c1", "c2", "c3"] and len(dst.read_text().splitlines()) == 4
    assert rows["c2"]["response"]["id"] != old["c2"]["response"]["id"]  # the old result was replaced
    assert all(rows[c] == old[c] for c in ("c0", "c1", "c3"))
    assert cli_main([*args, "--resume"]) == 0  # and the file now answers the changed input


def test_run_jsonl_takes_rerun_changed(tmp_path: Path, server: FakeServer) -> None:
    src, dst = _write(tmp_path / "in.jsonl", [_line("a", "one"), _line("b", "two")]), tmp_path / "out.jsonl"
    with sync_client(server) as client:
        run_jsonl(client, src, dst, model=MODEL)
        _write(src, [_line("a", "one"), _line("b", "TWO")])
        with pytest.raises(InvalidRequestError, match="rerun_changed=True"):
            run_jsonl(client, src, dst, model=MODEL, resume=True)
        report = run_jsonl(client, src, dst, model=MODEL, resume=True, rerun_changed=True)
    assert (report.skipped, report.rerun, report.succeeded) == (1, 1, 1)
    sent = _sent_texts(server)
    assert sorted(sent[:2]) == ["one", "two"] and sent[2:] == ["TWO"]


def test_rerun_changed_is_refused_with_ray_not_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _write(tmp_path / "in.jsonl", [_line("a", "one")])
    args = [str(src), "-o", str(tmp_path / "out"), "--ray", "--resume", "--rerun-changed"]
    assert cli_main(args) == 2
    assert "--rerun-changed cannot be used with --ray yet" in capsys.readouterr().err

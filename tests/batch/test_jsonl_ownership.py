"""The output belongs to the run: `--resume` continues only a holysheep results file (or an empty one) in the
format it holds, and the cache file is never the output file. Each refusal: exit 2 before any request, the
file untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holysheep import InvalidRequestError
from holysheep.batch import OutputNotResultsError, run_jsonl
from holysheep.batch.__main__ import main as cli_main
from holysheep.cache import SQLiteCache
from holysheep.testing import FakeServer

from .conftest import MODEL, chat_requests, sync_client


def _input(tmp_path: Path, n: int = 3) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]})
                           + "\n" for i in range(n)))
    return src


def _cli(server: FakeServer, src: Path, dst: Path, *more: str) -> list[str]:
    return [str(src), "-o", str(dst), "--base-url", server.url, "--model", MODEL, "--no-progress", *more]


def _sqlite_cache_file(path: Path) -> bytes:
    store = SQLiteCache(path)
    store.put("k", b'{"id": "x"}\n' * 3, model=MODEL, cost_usd=0.0)
    store.close()
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["sqlite-cache", "binary", "text", "json-not-results"])
def test_resume_refuses_a_file_that_is_not_a_results_file(kind: str, tmp_path: Path, server: FakeServer,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    dst = tmp_path / "target.out"
    if kind == "sqlite-cache":
        before = _sqlite_cache_file(dst)
    else:
        before = {"binary": bytes(range(256)) * 4 + b"\x00tail without newline",
                  "text": b"shopping list\nmilk\neggs",
                  "json-not-results": b'{"custom_id": "c0", "messages": []}\n'}[kind]
        dst.write_bytes(before)
    assert cli_main(_cli(server, _input(tmp_path), dst, "--resume")) == 2
    err = capsys.readouterr().err
    assert f"{dst} is not a results file of a holysheep run" in err and "-o" in err
    assert dst.read_bytes() == before and chat_requests(server) == []


def test_resume_accepts_an_empty_file(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    dst = tmp_path / "out.jsonl"
    dst.write_bytes(b"")
    assert cli_main(_cli(server, _input(tmp_path), dst, "--resume")) == 0
    assert len(chat_requests(server)) == 3 and len(dst.read_text().splitlines()) == 3


def test_a_torn_result_line_is_still_cut_but_a_foreign_tail_is_refused(tmp_path: Path, server: FakeServer) -> None:
    src, dst = _input(tmp_path), tmp_path / "out.jsonl"
    with sync_client(server) as client:
        run_jsonl(client, src, dst, model=MODEL)
        good = dst.read_bytes()
        dst.write_bytes(good + b'{"custom_id":"c9","request_hash":"ab","resp')  # a kill mid-write
        run_jsonl(client, src, dst, model=MODEL, resume=True)
        assert dst.read_bytes() == good
        dst.write_bytes(good + b"\x89PNG binary")
        with pytest.raises(OutputNotResultsError, match="its last line is neither a result line"):
            run_jsonl(client, src, dst, model=MODEL, resume=True)
    assert dst.read_bytes() == good + b"\x89PNG binary" and len(chat_requests(server)) == 3


@pytest.mark.parametrize("resume", [False, True])
def test_the_cache_file_is_never_the_output_file(resume: bool, tmp_path: Path, server: FakeServer,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    src, dst = _input(tmp_path), tmp_path / "out.jsonl"
    if resume:
        assert cli_main(_cli(server, src, dst)) == 0
    before = dst.read_bytes() if dst.exists() else None
    sent = len(chat_requests(server))
    args = _cli(server, src, dst, "--cache", str(tmp_path / "." / "out.jsonl"), *(["--resume"] if resume else []))
    assert cli_main(args) == 2
    assert "the response cache file and the output file are the same file" in capsys.readouterr().err
    assert (dst.read_bytes() if dst.exists() else None) == before and len(chat_requests(server)) == sent


def test_run_jsonl_refuses_a_cache_on_the_output_path(tmp_path: Path, server: FakeServer) -> None:
    src, dst = _input(tmp_path), tmp_path / "out.jsonl"
    with sync_client(server) as client, pytest.raises(InvalidRequestError, match="same file"):
        run_jsonl(client, src, dst, model=MODEL, cache=str(dst))
    assert not dst.exists() and chat_requests(server) == []


@pytest.mark.parametrize(("first", "then"), [("openai", "holysheep"), ("holysheep", "openai")])
def test_resume_in_another_output_format_is_refused_naming_both(first: str, then: str, tmp_path: Path,
                                                                server: FakeServer,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
    src, dst = _input(tmp_path, 4), tmp_path / "out.jsonl"
    assert cli_main(_cli(server, _input(tmp_path, 2), dst, "--output-format", first)) == 0
    src = _input(tmp_path, 4)  # two more lines to run
    before = dst.read_bytes()
    assert cli_main(_cli(server, src, dst, "--resume", "--output-format", then)) == 2
    err = capsys.readouterr().err
    assert f"holds {first}-format results" in err and f"--output-format {then}" in err
    assert f"--output-format {first}" in err
    assert dst.read_bytes() == before and len(chat_requests(server)) == 2
    assert cli_main(_cli(server, src, dst, "--resume", "--output-format", first)) == 0
    assert len(chat_requests(server)) == 4 and len(dst.read_text().splitlines()) == 4

"""`-` means stdin for `holysheep batch`'s input and stdout for its output (the result lines only)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from holysheep.cli import main
from holysheep.testing import FakeServer

LINES = "".join(json.dumps({"custom_id": f"id-{i}", "messages": [{"role": "user", "content": f"p{i}"}]}) + "\n"
                for i in range(3))


def test_stdin_to_stdout(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(LINES.encode())))
    with FakeServer() as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        code = main(["batch", "-", "-o", "-", "--base-url", server.url, "--model", "m", "--no-progress"])
        assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 3
    captured = capsys.readouterr()
    assert code == 0, captured.err
    results = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["custom_id"] for r in results] == ["id-0", "id-1", "id-2"]
    assert "3/3 done, 0 failed, 0 not run; results in stdout" in captured.err
    assert list(tmp_path.iterdir()) == []  # nothing left behind, no file named -


@pytest.mark.parametrize(("flags", "names"), [(["--resume"], "--resume"), (["--json"], "--json"),
                                              (["--ray"], "--ray")])
def test_stdout_refuses_what_it_cannot_do(flags: list[str], names: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(LINES)
    assert main(["batch", str(source), "-o", "-", *flags]) == 2
    assert capsys.readouterr().err == (f"holysheep batch: error: '-' (stdin/stdout) cannot be used with {names}: "
                                       "name a file instead.\n")

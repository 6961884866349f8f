"""Progress where people look: plain lines every 10 s when stderr is not a terminal, SIGTERM/SIGHUP stop
like Ctrl-C (flush, lock removed, how to resume, a distinct exit status), a working notebook bar without
ipywidgets, and a summary in the user's words."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from holysheep.batch import BatchStats, PlainProgress, make_progress
from holysheep.testing import FakeServer


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_non_terminal_stderr_gets_a_plain_line_every_10_s() -> None:
    stream = io.StringIO()  # not a TTY, like nohup, CI or a log file
    clock = _Clock()
    reporter = PlainProgress(stream, clock=clock)
    assert reporter.interval == 10.0
    stats = BatchStats(total=1000)
    reporter.start(stats)
    for second in range(1, 26):  # an update every second for 25 s
        clock.now += 1.0
        stats.succeeded = stats.done = second * 10
        reporter.update(stats)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # at 10 s and at 20 s
    assert lines[0].startswith("batch: 100/1,000 done, 0 failed")
    assert "ETA" in lines[0] and "\r" not in stream.getvalue()


def test_progress_true_is_plain_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    reporter = make_progress(True)
    assert isinstance(reporter, PlainProgress) and reporter.interval == 10.0


def _lines(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"custom_id": f"id-{i}", "messages": [{"role": "user", "content": f"p{i}"}]})
                            + "\n" for i in range(n)))
    return path


@pytest.mark.scale  # a long run: the `scale` group of .ci/run, not the default pytest
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_like_ctrl_c(tmp_path: Path, sig: int, status: int) -> None:
    src, dst = _lines(tmp_path / "in.jsonl", 300), tmp_path / "out.jsonl"
    with FakeServer(latency=0.2) as server:
        env = {**os.environ, "HOLYSHEEP_API_KEY": server.api_key, "HOLYSHEEP_LIMITS_DIR": "off"}
        cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", server.url,
               "--concurrency", "8"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while (not dst.exists() or dst.read_text().count("\n") < 10) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == status, err
        assert "--resume" in err and signal.Signals(sig).name in err
        assert not Path(str(dst) + ".lock").exists()  # the lock is gone
        done = [json.loads(x)["custom_id"] for x in dst.read_text().splitlines()]
        assert 10 <= len(done) < 300 and len(set(done)) == len(done)
        # --resume runs exactly the rest
        out = subprocess.run([*cmd, "--resume", "--json"], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert (report["skipped"], report["succeeded"]) == (len(done), 300 - len(done))
        assert f"300/300 done ({len(done)} from an earlier run)" in out.stderr
    assert [json.loads(x)["custom_id"] for x in dst.read_text().splitlines()] == [f"id-{i}" for i in range(300)]


def test_summary_speaks_the_users_words(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep.batch.__main__ import main as cli_main

    src, dst = _lines(tmp_path / "in.jsonl", 20), tmp_path / "out.jsonl"
    with FakeServer() as server:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", server.api_key)
        monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", "off")
        assert cli_main([str(src), "-o", str(dst), "--base-url", server.url]) == 0
        first = capsys.readouterr().err
        assert "20/20 done" in first
        assert "paced by the budget" not in first and "AIMD" not in first
        lines = dst.read_text().splitlines()
        dst.write_text("\n".join(lines[:12]) + "\n")  # 8 lines lost: the rest come from "an earlier run"
        assert cli_main([str(src), "-o", str(dst), "--base-url", server.url, "--resume"]) == 0
        assert "20/20 done (12 from an earlier run)" in capsys.readouterr().err


NOTEBOOK_CELL = """
import sys
from holysheep import Client
from holysheep.testing import FakeServer
with FakeServer(latency=0.02) as server:
    client = Client(api_key=server.api_key, base_url=server.url)
    results = client.chat.completions.batch([f"p{i}" for i in range(60)], model="gpt-4.1", progress=True,
                                            concurrency=4)
print(sum(r.ok for r in results), "ok")
"""


def test_notebook_progress_without_ipywidgets_shows_a_working_bar() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    try:
        import ipywidgets  # noqa: F401
        pytest.skip("ipywidgets is installed; this test is about notebooks without it")
    except ImportError:
        pass
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(NOTEBOOK_CELL)]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "60 ok" in text
    assert "ipywidgets" not in text and "warn" not in text.lower()  # rich's "install ipywidgets" warning
    displays = [o for o in outputs if o.output_type in ("display_data", "update_display_data")]
    assert displays, outputs
    html = displays[-1]["data"]["text/html"]
    assert "<progress" in html and "60/60 done" in displays[-1]["data"]["text/plain"]

"""Every script in examples/ runs as the README says: against `holysheep mock-server --structured`, with the two
lines its banner prints exported; each exits 0 and shows what it is for. Marker ``readme`` (run by .ci/run)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._util import EXAMPLES, ROOT, offline_env

pytestmark = pytest.mark.readme

# What each example is for, in its output against the mock server (a script not listed must print something).
SHOWS = {
    "tool_batch.py": "turn 1: get_weather(",  # a tool call, run by the agent loop
    "extract_batch.py": "invoices extracted",  # a structured batch
    "configuration.py": "Qwen/Qwen2.5-7B-Instruct",  # the self-hosted client answered
    "jsonl_batch.py": "done",
    "self_hosted_fallback.py": "0 gpu-box | Hello | circuit: closed\n1 gpu-box | Hello | circuit: open",  # a failover
}


@pytest.fixture(scope="module")
def mock_env() -> Iterator[dict[str, str]]:
    cli = Path(sys.executable).with_name("holysheep")
    proc = subprocess.Popen([str(cli), "mock-server", "--port", "0", "--structured"], cwd=ROOT, env=offline_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        exports: dict[str, str] = {}
        while len(exports) < 2:
            line = proc.stdout.readline()
            assert line, "mock-server ended before printing its export lines"
            exports.update(re.findall(r"export (HOLYSHEEP_\w+)=(\S+)", line))
        yield offline_env() | exports
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_example_runs_against_the_mock_server(script: str, mock_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=ROOT, env=mock_env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip(), f"{script} printed nothing"
    assert SHOWS.get(script, "") in proc.stdout, proc.stdout[-2000:]

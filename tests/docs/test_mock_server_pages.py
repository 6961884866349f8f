"""The snippets of docs/structured-outputs.md and docs/tools.md run against ``holysheep mock-server --structured
--script docs/snippets/mock-script.json``, started as a subprocess, as the pages tell a reader to."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ._util import offline_env
from .test_doc_snippets import DOCS, MOCK_SCRIPT, PRINTS, _run, page_snippets

PAGES = ["structured-outputs.md", "tools.md"]


@pytest.mark.integration
@pytest.mark.parametrize("name", PAGES)
def test_page_runs_against_mock_server(name: str, tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text("\n\n".join(page_snippets(DOCS / name)), encoding="utf-8")
    script = tmp_path / "run_page.py"
    script.write_text(
        "import ast, asyncio\n"
        f"code = compile(open({str(source)!r}).read(), {name!r}, 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\n"
        "result = eval(code, {'__name__': '__main__'})\n"
        "if asyncio.iscoroutine(result):\n    asyncio.run(result)\n", encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "holysheep", "mock-server", "--port", "0", "--structured", "--script",
         str(MOCK_SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=offline_env())
    try:
        assert server.stdout is not None
        words = server.stdout.readline().split()
        url, key = words[words.index("at") + 1], words[words.index("key") + 1]
        assert "structured" in server.stdout.readline()
        work = tmp_path / "work"
        work.mkdir()
        env = {**offline_env(), "HOLYSHEEP_BASE_URL": url, "HOLYSHEEP_API_KEY": key}
        stdout = _run([sys.executable, str(script)], work, env, f"{name} against mock-server")
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=10)
    assert server.returncode == 0 and "Traceback" not in err
    assert PRINTS[name] in stdout, stdout[-3000:]


def test_mock_server_refuses_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"match": "x"}]')
    done = subprocess.run([sys.executable, "-m", "holysheep", "mock-server", "--port", "0", "--script", str(bad)],
                          capture_output=True, text=True, timeout=30, env=offline_env())
    assert done.returncode == 2 and "--script:" in done.stderr and "bad.json" in done.stderr

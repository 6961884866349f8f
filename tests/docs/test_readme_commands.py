"""Every command in the README runs as written, in order, on a fresh clone (issue 17 item 1).

The test clones this repository into a temporary folder and runs the README's ```bash blocks there, one
bash shell with ``set -e``, so a command that needs an activated venv fails as it would for a newcomer.
Skipped lines: long-running servers (``mkdocs serve``, ``holysheep mock-server``) and commands that need
a key or the network (``holysheep chat|models|quota|batch|bench``). Marker ``readme`` (run by .ci/run);
it installs for real, reusing pip's cache. The README's test command runs in the clone with
``--collect-only`` (it must find and import every test there; the full run is CI's own step, which
calls that same command), and inside the clone this test skips itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ._util import ROOT, offline_env

pytestmark = pytest.mark.readme

NESTED = "HOLYSHEEP_README_TEST"
_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NOT_OFFLINE = re.compile(r"\b(mkdocs serve|mock-server|holysheep (chat|models|quota|batch|bench))\b")


def readme_commands(readme: str) -> list[str]:
    """The README's shell commands in order (continuation lines joined), minus the ones that cannot run
    offline and unattended."""
    commands: list[str] = []
    for block in _BLOCK.findall(readme):
        joined = re.sub(r"\s*\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#") and not _NOT_OFFLINE.search(line):
                commands.append(line)
    return commands


def test_readme_commands_are_extracted_in_order() -> None:
    text = ("x\n```bash\npython3 -m venv .venv && .venv/bin/python -m pip install -e \".[dev]\"\n"
            ".venv/bin/holysheep plan a \\\n  --context 8\n```\n```python\nprint(1)\n```\n"
            "```bash\n# comment\n.venv/bin/mkdocs serve\nholysheep chat hi\n.venv/bin/mkdocs build\n```\n")
    assert readme_commands(text) == ['python3 -m venv .venv && .venv/bin/python -m pip install -e ".[dev]"',
                                     ".venv/bin/holysheep plan a --context 8", ".venv/bin/mkdocs build"]


@pytest.mark.skipif(os.environ.get(NESTED) == "1", reason="already running inside the README's test command")
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to clone the repository")
def test_readme_commands_run_on_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    commands = readme_commands((clone / "README.md").read_text(encoding="utf-8"))
    assert any("pip install" in c for c in commands) and any("plan" in c for c in commands), commands
    env = {**offline_env(), NESTED: "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))  # not this checkout's venv
    for command in commands:
        if re.search(r"-m pytest\s*$", command):
            command += " --collect-only -q"  # collected and imported in the clone; CI runs the suite itself
        done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{command}"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, (f"README command failed on a fresh clone (exit {done.returncode}): "
                                      f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        if "holysheep plan" in command:
            assert "GPU" in done.stdout or "gpu" in done.stdout, done.stdout[-2000:]

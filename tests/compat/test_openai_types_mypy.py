"""A user module typed with openai-python's param and response types (`data/openai_typed_module.py`) type-checks
with ``mypy --strict`` against holysheep after only its import lines change (#44): ``holysheep.types.chat`` and
``holysheep.types.shared_params`` have openai's names and shapes. mypy takes a while: the ``typecheck`` group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = Path(__file__).parent / "data" / "openai_typed_module.py"
IMPORTS = {"from openai import OpenAI": "from holysheep import OpenAI",
           "from openai.types.chat import": "from holysheep.types.chat import",
           "from openai.types.shared_params import": "from holysheep.types.shared_params import"}

pytestmark = pytest.mark.typecheck

def _holysheep_version(text: str) -> str:
    for theirs, ours in IMPORTS.items():
        assert text.count(theirs) == 1, theirs
        text = text.replace(theirs, ours)
    assert "openai" not in text.replace("openai-python", "")
    return text


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache),
                           "--config-file", os.devnull, str(path)], capture_output=True, text=True, env=env,
                          timeout=600)


def test_the_module_is_about_48_lines_of_real_openai_code() -> None:
    lines = MODULE.read_text().splitlines()
    assert 40 <= len(lines) <= 60
    assert sum(line.startswith(("from openai", "    Chat")) for line in lines) >= 8  # openai's types, imported


def test_openai_typed_module_type_checks_against_holysheep(tmp_path: Path) -> None:
    theirs = _mypy(MODULE, tmp_path / "cache")
    assert theirs.returncode == 0 and theirs.stdout == "", theirs.stdout  # 0 errors with openai
    ours = tmp_path / "holysheep_typed_module.py"
    ours.write_text(_holysheep_version(MODULE.read_text()))
    done = _mypy(ours, tmp_path / "cache")
    assert done.stdout == "" and done.returncode == 0, done.stdout  # and 0 with holysheep

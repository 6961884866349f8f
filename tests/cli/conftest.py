"""Run the ``holysheep`` CLI as a subprocess (``python -m holysheep``) against FakeServer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "holysheep"]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any HolySheep settings of the developer's (but with the test's own
    rate-limit folder, see tests/conftest.py), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOLYSHEEP_") or k == "HOLYSHEEP_LIMITS_DIR"}
    env.update(extra)
    return env


ERROR_LINE = re.compile(r"holysheep(?: [a-z-]+)?: error: \S")
"""The one error format of every sub-command: ``holysheep <command>: error: <message>`` (argparse's)."""


def assert_one_line_error(stderr: str, command: str | None = None) -> None:
    """A user error: exactly one ``holysheep <command>: error:`` line and no traceback."""
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert ERROR_LINE.match(lines[0]), stderr
    if command is not None:
        assert lines[0].startswith(f"holysheep {command}: error: "), stderr


def assert_no_key(text: str, key: str) -> None:
    """Neither ``key`` nor any 8-character piece of it appears in ``text``."""
    for i in range(len(key) - 7):
        assert key[i : i + 8] not in text, f"key piece {key[i:i + 8]!r} leaked"


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def cli() -> Runner:
    """``cli(*args, input=None, env=None, timeout=60)`` runs the CLI and returns the completed process."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv: Sequence[str] = [*CLI, *args]
        return subprocess.run(argv, input=input if input is not None else "", capture_output=True, text=True,
                              env=env if env is not None else clean_env(), timeout=timeout)

    return run


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    """A one-line JSONL batch input (custom_id ``a``)."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    return path

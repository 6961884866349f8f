"""Helpers for the docs tests: the repository root and a clean environment for child processes."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def offline_env() -> dict[str, str]:
    """This process's environment without HOLYSHEEP_* / OPENAI_* settings, so examples start a FakeServer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOLYSHEEP_", "OPENAI_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env

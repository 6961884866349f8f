"""The architecture page's list of request-path modules, from the modules themselves (their docstrings)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "holysheep"
REQUEST_PATH = ("_core", "_transports", "_engine", "_clients", "cache", "batch", "integrations", "testing")
"""The folders of the request path (the planner's are described in hardware.md and estimator.md)."""


def _summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    end = first.find(". ")
    sentence = first if end < 0 else first[:end + 1]
    return sentence.replace("|", "\\|") or "(no docstring)"


def request_path_modules() -> str:
    """One row per module of the request path's folders: its path and the first sentence of its docstring."""
    rows = ["| Module | What it does |", "|---|---|"]
    for folder in REQUEST_PATH:
        for path in sorted((SRC / folder).rglob("*.py")):
            if path.name == "__init__.py" and path.parent != SRC / folder:
                continue
            rel = path.relative_to(SRC).as_posix()
            rows.append(f"| `{rel}` | {_summary(path)} |")
    return "\n".join(rows)

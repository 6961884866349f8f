"""``tools/floors.txt`` pins each declared dependency floor exactly (issue 46): ``.ci/run`` installs it and runs
the request-path tests on those releases, so the floors in pyproject.toml are ones that were tested."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    found = re.findall(r'"([A-Za-z0-9_.-]+)>=([0-9][^,"]*)', block)
    return {name.lower(): version for name, version in found}


def _pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "tools" / "floors.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _release(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    while len(parts) < 3:
        parts.append(0)  # 3.9 is 3.9.0
    return tuple(parts)


def test_every_declared_floor_is_pinned_exactly() -> None:
    declared, pinned = _declared(), _pinned()
    assert set(declared) == {"aiohttp", "httpx", "httpcore", "pydantic", "typing-extensions"}
    for name, floor in declared.items():
        assert name in pinned, f"{name}>={floor} is declared but not in tools/floors.txt"
        assert _release(pinned[name]) == _release(floor), \
            f"tools/floors.txt pins {name}=={pinned[name]}, pyproject.toml declares {name}>={floor}"
    assert set(pinned) == set(declared), f"tools/floors.txt pins more: {sorted(set(pinned) - set(declared))}"

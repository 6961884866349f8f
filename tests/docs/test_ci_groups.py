"""``.ci/groups`` names, for each marked group ``.ci/run`` runs, the files its tests are in (so a group collects only
those): every file that uses a group's marker must be listed under it, or CI would never run that test."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _groups() -> dict[str, list[str]]:
    groups = {}
    for line in (ROOT / ".ci" / "groups").read_text(encoding="utf-8").splitlines():
        words = shlex.split(line.split("#", 1)[0])
        if words:
            groups[words[0]] = [w for w in words[1:] if not w.startswith("-") and not w.isdigit()]
    return groups


def _deselected() -> set[str]:
    addopts = re.search(r"^addopts = (.*)$", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert addopts is not None
    return set(re.findall(r"not (\w+)", addopts.group(1)))


def _covered(path: Path, listed: list[str]) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return any(relative == entry or relative.startswith(entry.rstrip("/") + "/") for entry in listed)


def test_the_groups_are_the_markers_the_default_run_deselects() -> None:
    assert set(_groups()) == _deselected()


def test_every_file_using_a_group_marker_is_in_that_group() -> None:
    groups = _groups()
    missing = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for marker in set(re.findall(r"mark\.(\w+)\b", text)) & set(groups):
            if not _covered(path, groups[marker]):
                missing.append(f"{path.relative_to(ROOT)} uses pytest.mark.{marker}: add it to .ci/groups")
    assert not missing, "\n".join(missing)


def test_every_listed_path_exists() -> None:
    for marker, paths in _groups().items():
        for entry in paths:
            assert (ROOT / entry).exists(), f".ci/groups: {marker} lists {entry}, which does not exist"

"""docs/architecture.md's folder table names every folder of ``src/holysheep`` and no folder that is gone."""

from __future__ import annotations

import re

from ._util import ROOT

PACKAGE = ROOT / "src" / "holysheep"


def _table_folders() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The folders", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in first_cells for name in re.findall(r"`([\w.]+)/`", cell)}


def test_every_package_folder_is_in_the_architecture_table() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert "accelerators" in folders and "_core" in folders
    named = _table_folders()
    assert folders - named == set(), "docs/architecture.md does not name these folders: add a row"
    assert named - folders == set(), "docs/architecture.md names folders that are gone"

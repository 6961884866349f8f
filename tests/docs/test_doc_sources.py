"""Docs name their sources (a paper, a datasheet, a benchmark page, a config.json), never the project's internal
research files (issue 17 item 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ._util import ROOT

# The internal research notes and the places they live; none of them is a source a reader can open.
INTERNAL = re.compile(
    r"\b(?:gpus|peers|sdk-anchors|batch-at-scale|real-servers)\.md\b|\bsdk-anchors\b|\bbatch-at-scale\b"
    r"|\bestimator\.md\s*(?:§|section)|shared/reference|/work/|\bour research\b|\breference block\b",
    re.IGNORECASE)

PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "mkdocs.yml", ROOT / "README.md"])


def internal_references(text: str) -> list[str]:
    """The lines of `text` that cite an internal research file."""
    return [line.strip() for line in text.splitlines() if INTERNAL.search(line)]


def test_pattern_catches_internal_files_and_spares_public_names() -> None:
    assert internal_references("See gpus.md section 8.1.\nas in estimator.md §8\nsee /work/shared/reference/x")
    assert internal_references("the CSV names of the reference block") == ["the CSV names of the reference block"]
    assert internal_references("peers.md") and internal_references("sdk-anchors") and internal_references(
        "batch-at-scale.md") and internal_references("real-servers.md")
    assert not internal_references("[GPU memory estimator](estimator.md#formulas), `data/gpus.json`, "
                                   "[Testing](testing.md), arXiv:2305.14314 §3")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cite_no_internal_files(page: Path) -> None:
    found = internal_references(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)} cites internal files; name the public source instead: {found}"

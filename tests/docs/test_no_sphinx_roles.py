"""No raw Sphinx roles (:class:`X`, :func:`f` ...) in the sources or docs pages: mkdocs renders them as
text (issue 17 item 14). Docstrings use plain `backticks`."""

from __future__ import annotations

import re
from pathlib import Path

from ._util import ROOT

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj):`")


def _hits(paths: list[Path]) -> list[str]:
    hits = []
    for path in paths:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ROLE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    return hits


def test_role_pattern_catches_each_role() -> None:
    for role in ("class", "func", "meth", "attr", "mod", "exc", "data", "py:class"):
        assert ROLE.search(f"see :{role}:`~holysheep.Client`")
    assert not ROLE.search("see `holysheep.Client` and [Client][holysheep.Client]")


def test_no_sphinx_roles_in_src() -> None:
    hits = _hits(sorted((ROOT / "src").rglob("*.py")))
    assert not hits, f"{len(hits)} Sphinx roles (use plain `backticks`):\n" + "\n".join(hits)


def test_no_sphinx_roles_in_docs() -> None:
    hits = _hits([*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"])
    assert not hits, f"{len(hits)} Sphinx roles (use plain `backticks`):\n" + "\n".join(hits)

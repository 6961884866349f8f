"""``mkdocs build --strict`` passes: every nav page exists, every snippet file and section resolves, every
mkdocstrings ``:::`` target imports. Skipped when the docs tools are not installed (``pip install -e '.[docs]'``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ._util import ROOT, offline_env
from .test_doc_sources import internal_references

# Built pages that still cite an internal research file through a docstring in src/ (fix the docstring, then
# remove the page here; the test fails when a listed page is clean, so the list only shrinks).
CITES_INTERNAL_FILES: set[str] = set()


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = offline_env() | {"NO_MKDOCS_2_WARNING": "1"}
    # The README's command (`mkdocs build --strict`, no -q: quiet mode hides what strict mode fails on), built
    # into a temporary folder instead of site/.
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "WARNING" not in proc.stderr + proc.stdout, proc.stderr[-5000:]
    assert (tmp_path / "site" / "reference" / "clients" / "index.html").is_file()
    site = tmp_path / "site"
    citing = {str(page.relative_to(site)) for page in site.rglob("*.html")
              if internal_references(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))}
    assert citing == CITES_INTERNAL_FILES, "built pages citing internal research files changed: " \
        f"new {sorted(citing - CITES_INTERNAL_FILES)}, now clean {sorted(CITES_INTERNAL_FILES - citing)}"


def test_snippets_point_at_examples() -> None:
    """Pages take their code from examples/ (which the example tests run), not from copies."""
    for page in ("index.md", "configuration.md", "streaming.md", "errors.md", "fallback.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        refs = re.findall(r'--8<-- "(examples/[^":]+)(?::([\w-]+))?"', text)
        assert refs, f"docs/{page} includes no example"
        for path, section in refs:
            source = (ROOT / path).read_text(encoding="utf-8")
            if section:
                assert f"--8<-- [start:{section}]" in source and f"--8<-- [end:{section}]" in source, (page, path)

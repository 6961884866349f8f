"""The Python snippets in docs/*.md run as written (issue 17 item 15).

A page's snippets are run top to bottom in one namespace, as a reader pastes them, with ``--8<--``
includes resolved the way pymdownx.snippets does, against a local FakeServer (``HOLYSHEEP_BASE_URL``/
``HOLYSHEEP_API_KEY`` in the environment). A page whose snippets use names they never define is a page
of fragments; those pages are listed in FRAGMENT_PAGES, and the list may only shrink.
"""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from holysheep.testing import FakeServer

from ._util import ROOT, offline_env

DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_INCLUDE = re.compile(r'^[ \t]*--8<-- "([^":]+)(?::([\w-]+))?"[ \t]*$', re.MULTILINE)

# Pages whose snippets are still fragments (free names in brackets when this list was written). Fix a page,
# then remove it here: the test fails when a listed page has become runnable, so the list only shrinks.
FRAGMENT_PAGES = {
    "batch.md",  # aclient, huge_generator, prompts, save, client
    "configuration.md",  # api_key, base_url, HI, client, vllm
    "errors.md",  # HI, and later blocks rely on imports not shown
    "fallback.md",  # api_key, base_url, box
    "testing.md",  # summarize, server, Response, pytest fixtures
    "structured-outputs.md",  # sections of examples/extract_batch.py (which runs whole in test_examples)
}


def _include(match: re.Match[str]) -> str:
    text = (ROOT / match.group(1)).read_text(encoding="utf-8")
    section = match.group(2)
    if section:
        text = text.split(f"--8<-- [start:{section}]", 1)[1].split("\n", 1)[1]
        text = text.split(f"--8<-- [end:{section}]", 1)[0].rsplit("\n", 1)[0]
    return textwrap.dedent(text)


def page_snippets(page: Path) -> list[str]:
    """The page's python blocks, includes resolved."""
    return [_INCLUDE.sub(_include, block) for block in _BLOCK.findall(page.read_text(encoding="utf-8"))]


def free_names(snippets: list[str]) -> set[str]:
    """Names the snippets read but neither bind (in any earlier or the same block) nor import."""
    bound: set[str] = set(dir(builtins))
    free: set[str] = set()
    for code in snippets:
        tree = ast.parse(code)  # top-level await parses; compile() above checks it is allowed
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.comprehension):
                bound.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        free |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
    return free


PAGES = sorted(p for p in DOCS.glob("*.md") if page_snippets(p))


def test_free_names_sees_undefined_base_url() -> None:
    assert free_names(["client = Client(base_url=base_url)"]) == {"Client", "base_url"}
    assert free_names(["from holysheep import Client\nc = Client()", "c.close()"]) == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_snippets_parse_and_fragment_list_is_current(page: Path) -> None:
    snippets = page_snippets(page)
    for code in snippets:
        compile(code, str(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    free = free_names(snippets)
    if page.name in FRAGMENT_PAGES:
        assert free, f"{page.name} runs as written now: remove it from FRAGMENT_PAGES"
    else:
        assert not free, f"{page.name}: snippets use undefined names {sorted(free)}"


# Pages whose snippets are complete but read the reader's own files.
NEEDS_READER_FILES = {"hardware.md": "reads my_prices.csv, the reader's own price file",
                      "scale-out.md": "reads s3://bucket/..., the reader's own data "
                                      "(examples/ray_batch.py is the offline version)"}
RUNNABLE = [pytest.param(p, marks=pytest.mark.skip(reason=NEEDS_READER_FILES[p.name]))
            if p.name in NEEDS_READER_FILES else p for p in PAGES if p.name not in FRAGMENT_PAGES]


@pytest.mark.integration
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: getattr(p, "name", str(p)))
def test_page_snippets_run_as_written(page: Path, tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text("\n\n".join(page_snippets(page)), encoding="utf-8")
    script = tmp_path / "run_page.py"  # top-level await, as in a notebook or `python -m asyncio`
    script.write_text(
        "import ast, asyncio, sys\n"
        f"code = compile(open({str(source)!r}).read(), {page.name!r}, 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\n"
        "result = eval(code, {'__name__': '__main__'})\n"
        "if asyncio.iscoroutine(result):\n    asyncio.run(result)\n", encoding="utf-8")
    with FakeServer() as server:
        env = {**offline_env(), "HOLYSHEEP_BASE_URL": server.url, "HOLYSHEEP_API_KEY": server.api_key}
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, f"{page.name}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr

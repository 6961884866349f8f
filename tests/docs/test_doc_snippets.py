"""The Python snippets in docs/*.md run as written (issue 17 item 15).

A page's python blocks run top to bottom in one namespace, as a reader pastes them into a notebook (top-level
``await`` allowed), with ``--8<--`` includes resolved the way pymdownx.snippets does, in an empty working
directory. The servers they talk to are local:

- ``HOLYSHEEP_BASE_URL`` / ``HOLYSHEEP_API_KEY`` point at a FakeServer playing the HolySheep API (with the
  replies or faults a page's story needs, see ``API_SERVER``);
- ``VLLM_BASE_URL`` points at a keyless FakeServer playing the reader's own OpenAI-compatible server.

A block fenced as ``python title="test_….py"`` is a pytest file: it is written under that name and run with
pytest (the holysheep plugin's fixtures available, no HOLYSHEEP_* variables set). Every block must define or
import every name it reads (a test file on its own, the other blocks together), so no page is a set of fragments.
"""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from holysheep.testing import FakeServer, Fault, Script, ScriptedReply, auto_reply, schema_reply

from ._util import ROOT, offline_env

DOCS = ROOT / "docs"
MOCK_SCRIPT = DOCS / "snippets" / "mock-script.json"
"""The reply script tools.md runs against (``holysheep mock-server --structured --script ...``)."""
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```",
                    re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r'title="(test_\w+\.py)"')
_INCLUDE = re.compile(r'^[ \t]*--8<-- "([^":]+)(?::([\w-]+))?"[ \t]*$', re.MULTILINE)


def _include(match: re.Match[str]) -> str:
    text = (ROOT / match.group(1)).read_text(encoding="utf-8")
    section = match.group(2)
    if section:
        text = text.split(f"--8<-- [start:{section}]", 1)[1].split("\n", 1)[1]
        text = text.split(f"--8<-- [end:{section}]", 1)[0].rsplit("\n", 1)[0]
    return textwrap.dedent(text)


def _blocks(page: Path) -> list[tuple[str | None, str]]:
    """(test file name or None, code) for each python block of the page, in order, includes resolved."""
    out = []
    for m in _FENCE.finditer(page.read_text(encoding="utf-8")):
        code = _INCLUDE.sub(_include, textwrap.dedent(m.group("body")))
        title = _TITLE.search(m.group("attrs"))
        out.append((title.group(1) if title else None, code))
    return out


def page_snippets(page: Path) -> list[str]:
    """The blocks a reader runs in order (test files excluded)."""
    return [code for name, code in _blocks(page) if name is None]


def page_test_files(page: Path) -> dict[str, str]:
    """The blocks that are pytest files, by file name."""
    return {name: code for name, code in _blocks(page) if name is not None}


def free_names(snippets: list[str]) -> set[str]:
    """Names the snippets read but neither bind (in any earlier or the same block) nor import."""
    bound: set[str] = set(dir(builtins))
    free: set[str] = set()
    for code in snippets:
        tree = ast.parse(code)  # top-level await parses; compile() in the test checks it is allowed
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


PAGES = sorted(p for p in DOCS.glob("*.md") if _blocks(p))


def test_free_names_sees_undefined_base_url() -> None:
    assert free_names(["client = Client(base_url=base_url)"]) == {"Client", "base_url"}
    assert free_names(["from holysheep import Client\nc = Client()", "c.close()"]) == set()


def test_blocks_find_indented_fences_and_test_files(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text('=== "tab"\n\n    ```python\n    x = 1\n    ```\n\n'
                    '```python title="test_a.py"\ndef test_a():\n    assert x\n```\n', encoding="utf-8")
    assert page_snippets(page) == ["x = 1\n"]
    assert page_test_files(page) == {"test_a.py": "def test_a():\n    assert x\n"}
    assert free_names(list(page_test_files(page).values())) == {"x"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_snippets_parse_and_define_every_name(page: Path) -> None:
    snippets = page_snippets(page)
    for code in snippets:
        compile(code, str(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert not free_names(snippets), f"{page.name}: snippets use undefined names {sorted(free_names(snippets))}"
    for name, code in page_test_files(page).items():
        compile(code, name, "exec")
        assert not free_names([code]), f"{page.name} {name}: undefined names {sorted(free_names([code]))}"


def _invoice_reply(body: dict[str, Any]) -> ScriptedReply:
    """A model that fills the request's schema, and fails it for a document marked unreadable."""
    text = str(body["messages"][0]["content"])
    return schema_reply(violate="unreadable" in text and len(body["messages"]) == 1)(body)


# What the page's HolySheep API server does, where a plain echo is not the story the page tells.
API_SERVER: dict[str, Callable[[], dict[str, Any]]] = {
    "fallback.md": lambda: {"faults": [Fault.status(503)] * 4},    # the primary is down for a while
    "migrating.md": lambda: {"reply": auto_reply()},               # parse() gets JSON that fits its schema
    "frameworks.md": lambda: {"reply": auto_reply()},              # tool calls and schema-valid JSON
    "responses.md": lambda: {"reply": auto_reply()},               # responses.parse() too
    "structured-outputs.md": lambda: {"reply": _invoice_reply},    # a model that answers in JSON
    "tools.md": lambda: {"reply": Script.load(MOCK_SCRIPT, fallback=auto_reply())},  # the page's mock-server
}
# A line each page prints when its story happened as the page tells it.
PRINTS = {
    "batch.md": "2 succeeded, 0 failed, 0 skipped (already done)",
    "configuration.md": "refused: Refusing to send the API key over plain http://",
    "errors.md": "StreamInterruptedError; partial_text = 'one two '",
    "fallback.md": "after cool-down: primary | circuit: closed",
    "migrating.md": "name='example' req_",
    "responses.md": "city='example' country='example'",
    "structured-outputs.md": "not an Invoice:",
    "tools.md": "4 agents finished in 8 requests",
    "testing.md": "400 content_policy",
    "hardware.md": "2.1 32.0",
    "scale-out.md": "0 rows failed",
    "frameworks.md": "JSON True",
}
# Pages that need an optional extra: (module, marker).
EXTRA = {"scale-out.md": ("ray", pytest.mark.ray), "frameworks.md": ("instructor", pytest.mark.frameworks)}
RUNNABLE = [pytest.param(p, marks=EXTRA[p.name][1]) if p.name in EXTRA else p for p in PAGES]


def _run(args: list[str], cwd: Path, env: dict[str, str], what: str) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{what}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"{what}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.integration
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: getattr(p, "name", str(p)))
def test_page_snippets_run_as_written(page: Path, tmp_path: Path) -> None:
    if page.name in EXTRA:
        pytest.importorskip(EXTRA[page.name][0], reason=f"{page.name} needs the {EXTRA[page.name][0]} extra")
    work = tmp_path / "work"
    work.mkdir()
    snippets, test_files = page_snippets(page), page_test_files(page)
    if snippets:
        source = tmp_path / "page.py"
        source.write_text("\n\n".join(snippets), encoding="utf-8")
        script = tmp_path / "run_page.py"  # top-level await, as in a notebook or `python -m asyncio`
        script.write_text(
            "import ast, asyncio, sys\n"
            f"code = compile(open({str(source)!r}).read(), {page.name!r}, 'exec', "
            "flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\n"
            "result = eval(code, {'__name__': '__main__'})\n"
            "if asyncio.iscoroutine(result):\n    asyncio.run(result)\n", encoding="utf-8")
        options = API_SERVER.get(page.name, dict)()
        with FakeServer(**options) as api, FakeServer(require_auth=False) as own_server:
            env = {**offline_env(), "HOLYSHEEP_BASE_URL": api.url, "HOLYSHEEP_API_KEY": api.api_key,
                   "VLLM_BASE_URL": own_server.url}
            stdout = _run([sys.executable, str(script)], work, env, page.name)
        assert PRINTS.get(page.name, "") in stdout, f"{page.name} printed:\n{stdout[-3000:]}"
    if test_files:
        for name, code in test_files.items():
            (work / name).write_text(code, encoding="utf-8")
        _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *test_files], work, offline_env(),
             f"{page.name} test files")

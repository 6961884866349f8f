"""The folders are the layers, and imports point one way: what each room (folder) may import is the
"Layering rules" table of docs/architecture.md, which this test reads (the doc shows the rules it enforces).

Every import statement counts: module level, function level and ``if TYPE_CHECKING`` alike (a lazy or
type-only import is still a dependency). No file may import a room its own may not, and no two files may
import each other, directly or through a circle; the planner and the request path are separate trees."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "holysheep"
DOC = SRC.parents[1] / "docs" / "architecture.md"


def read_rules(text: str) -> dict[str, frozenset[str]]:
    """The "Layering rules" table of docs/architecture.md: each room and the rooms it may import."""
    block = text.split("<!-- layering-rules -->", 1)[1].split("<!-- end layering-rules -->", 1)[0]
    rules: dict[str, frozenset[str]] = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed = frozenset() if cells[1] == "nothing" else frozenset(c.strip().strip("`") for c in cells[1].split(","))
        rules[cells[0].strip("`")] = allowed
    return rules


MAY_IMPORT = read_rules(DOC.read_text(encoding="utf-8"))
"""Room -> the rooms it may import (its own always): the table the doc shows, read from it."""
PLANNER = {"estimator", "hardware", "accelerators"}
REQUEST_PATH = {"_transports", "_engine", "_clients", "batch", "integrations"}
MAX_ROOT_MODULES = 12


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room(module: str) -> str:
    parts = module.split(".")
    if parts[-1] == "__main__":  # `python -m holysheep[.batch]`: a command line, whatever its folder
        return "__main__"
    return "holysheep" if len(parts) == 1 else parts[1]


def imports_of(path: Path, module: str, modules: Iterable[str]) -> set[str]:
    """The holysheep modules (files) that ``path`` imports anywhere in its body."""
    known = set(modules)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == "holysheep")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != "holysheep":
                continue
            for alias in node.names:
                full = f"{name}.{alias.name}"
                found.add(full if full in known else resolve(name))
    found.discard(None)
    found.discard(module)
    return {m for m in found if m is not None}


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    paths = {module_name(p, src): p for p in sorted(src.rglob("*.py"))}
    return {m: imports_of(p, m, paths) for m, p in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward_imports(graph: dict[str, set[str]], rules: dict[str, frozenset[str]] | None = None) -> list[str]:
    rules = MAY_IMPORT if rules is None else rules
    wrong = []
    for module, targets in sorted(graph.items()):
        own = room(module)
        for target in sorted(targets):
            other = room(target)
            if own == other:
                continue
            if own not in rules or other not in rules:
                wrong.append(f"{module} -> {target}: a room the layering rules (docs/architecture.md) do not name")
            elif other not in rules[own]:
                wrong.append(f"{module} ({own}) imports {target} ({other}), which its room may not import")
            elif (own in PLANNER and other in REQUEST_PATH) or (own in REQUEST_PATH and other in PLANNER):
                wrong.append(f"{module} ({own}) imports {target} ({other}): the planner and the request path "
                             "are separate trees")
    return wrong


def test_no_import_circles_between_files() -> None:
    graph = import_graph()
    assert len(graph) >= 100
    assert circles(graph) == []


def test_imports_point_down_the_layers() -> None:
    assert upward_imports(import_graph()) == []


def test_the_package_root_holds_few_modules() -> None:
    root = sorted(p.name for p in SRC.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    assert {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()} <= set(MAY_IMPORT)


def test_the_checks_catch_a_circle_and_an_upward_import(tmp_path: Path) -> None:
    """The checks above are not vacuous: a scratch package with a function-level circle and a core module
    that imports a client is caught by both."""
    pkg = tmp_path / "holysheep"
    for folder in ("_core", "_clients"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "_core" / "a.py").write_text("def f():\n    from holysheep._core import b\n")
    (pkg / "_core" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    from holysheep._core.a import f\n")
    (pkg / "_core" / "c.py").write_text("from holysheep._clients.client import Client\n")
    (pkg / "_clients" / "client.py").write_text("from .. import _core\nclass Client: ...\n")
    graph = import_graph(pkg)
    assert circles(graph) == [["holysheep._core.a", "holysheep._core.b"]]
    assert upward_imports(graph) == [
        "holysheep._core.c (_core) imports holysheep._clients.client (_clients), which its room may not import"]


def test_the_rules_are_the_docs_table_and_forbid_going_up() -> None:
    """The table is read (every room of the package is in it), and it never lets a lower room import a higher
    one: the engine never imports a client, the core never the engine, nothing but the CLI imports the CLI."""
    assert len(MAY_IMPORT) >= 20 and MAY_IMPORT["_egress"] == frozenset()
    assert "_clients" not in MAY_IMPORT["_engine"] and "_engine" not in MAY_IMPORT["_core"]
    assert [r for r, allowed in MAY_IMPORT.items() if "cli" in allowed] == ["__main__"]
    assert read_rules("x\n<!-- layering-rules -->\n| Room | May import |\n|---|---|\n| `a` | `b`, `c` |\n"
                      "| `b` | nothing |\n<!-- end layering-rules -->\n") == {"a": {"b", "c"}, "b": frozenset()}


def test_the_batch_reads_no_client_privates() -> None:
    offenders = []
    for path in sorted([*(SRC / "batch").glob("*.py"), *(SRC / "_engine").glob("*.py")]):
        text = path.read_text(encoding="utf-8")
        for private in ("._config", "._router", "._owns_http", "._http", "._backend", "._from_config",
                        "._OPTION_NAMES", "._split"):
            if private in text:
                offenders.append(f"{path.name}: {private}")
    assert offenders == []


def test_the_integrations_read_no_privates_of_other_objects() -> None:
    """Integrations sit above the clients and the batch: they use public or semi-public entry points
    (`AsyncClient.sender()`, `iterator_for`, ...), never another object's `_attribute`."""
    offenders = []
    paths = sorted((SRC / "integrations").rglob("*.py"))
    assert paths
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert offenders == []

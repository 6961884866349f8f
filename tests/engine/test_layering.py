"""Layers point one way: core <- clients <- batch / integrations <- cli. Checked by walking the import
statements of every module (module level, outside ``if TYPE_CHECKING``); no cycles between layers."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "holysheep"
CLIENTS = {"_client", "_async_client", "_base_client", "_sender", "resources"}
LAYERS = {"core": 0, "clients": 1, "batch": 2, "integrations": 2, "cli": 3}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "holysheep" or len(parts) == 1:
        return None
    top = parts[1]
    if top in CLIENTS:
        return "clients"
    if top == "batch":
        return "cli" if len(parts) > 2 and parts[2] in ("_cli", "__main__") else "batch"
    if top == "integrations":
        return "integrations"
    if top in ("cli", "__main__"):
        return "cli"
    if top.startswith("_") or top == "types":
        return "core"
    return None  # estimator, hardware, testing, pricing: separate trees, not on the request path


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(path: Path, module: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                found.append(name)
                found.extend(f"{name}.{alias.name}" for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def test_module_level_imports_point_down_the_layers() -> None:
    wrong: list[str] = []
    checked = 0
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        own = _layer(module)
        if own is None:
            continue
        checked += 1
        for target in _top_level_imports(path, module):
            other = _layer(target)
            if other is not None and LAYERS[other] > LAYERS[own]:
                wrong.append(f"{module} ({own}) imports {target} ({other})")
    assert checked >= 30
    assert wrong == []


def test_the_batch_reads_no_client_privates() -> None:
    offenders = []
    for path in sorted((SRC / "batch").glob("*.py")):
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

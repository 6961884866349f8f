"""The planner's import graph: ``accelerators`` (the GPU table) sits below both ``estimator`` and
``hardware``; the estimator never imports hardware; no two planner files import each other, directly or
through a circle, counting function-level and ``TYPE_CHECKING`` imports."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "holysheep"
PLANNER = ("estimator", "hardware", "accelerators", "pricing")


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.startswith("holysheep"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                if name.startswith("holysheep"):
                    for a in node.names:
                        full = f"{name}.{a.name}"
                        deps.add(resolve(full) if full in mods else resolve(name))
        graph[m] = {d for d in deps if d is not None and d != m}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def _in(m: str, top: str) -> bool:
    return m == f"holysheep.{top}" or m.startswith(f"holysheep.{top}.")


def test_no_planner_file_is_on_an_import_circle() -> None:
    graph = _graph()
    planner = [m for m in graph if any(_in(m, t) for t in PLANNER)]
    assert len(planner) >= 25
    assert sorted(m for m in planner if m in _reachable(graph, m)) == []


def test_the_accelerator_table_sits_below_estimator_and_hardware() -> None:
    graph = _graph()
    acc = [m for m in graph if _in(m, "accelerators")]
    assert len(acc) >= 4
    for m in acc:
        outside = {d for d in graph[m] if not _in(d, "accelerators")}
        assert outside <= {"holysheep._exceptions"}, (m, outside)
    for m in (m for m in graph if _in(m, "estimator")):
        assert not any(_in(d, "hardware") for d in _reachable(graph, m)), m


def test_hardware_reexports_the_same_public_names() -> None:
    import holysheep.accelerators as acc
    import holysheep.hardware as hw

    assert hw.__all__ == [
        "DEFAULT_EFFICIENCIES", "EFFICIENCY_SOURCES", "GPU", "NATIVE_KEYS", "OBJECTIVES", "PRECISIONS",
        "PRICE_KINDS", "Efficiencies", "GPUTable", "HardwareOption", "PickResult", "PriceQuote",
        "compute_peak", "decode_tokens_per_s", "gpu", "gpus", "load_gpus", "pick_hardware",
        "prefill_tokens_per_s", "register_gpus", "reset_gpus", "train_tokens_per_s",
    ]
    for name in hw.__all__:
        assert getattr(hw, name) is not None
    for name in ("GPU", "GPUTable", "PriceQuote", "gpu", "gpus", "load_gpus", "register_gpus", "reset_gpus"):
        assert getattr(hw, name) is getattr(acc, name)

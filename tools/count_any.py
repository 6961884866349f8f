"""Count the `Any` used as a type in `src/holysheep`, and the escapes from the checker.

An `Any` is a `Name` node `Any` or an attribute `typing.Any` in the parsed code, plus those inside quoted
annotations (`"BaseClient[Any, Any]"`, a `TypeVar` bound). Import lines, comments and docstrings are not code,
so they never count. The same walk counts `# type: ignore` comments and `cast(...)` calls, which must not grow
while `Any` goes down.

    python tools/count_any.py            # totals and a per-folder table
    python tools/count_any.py --files    # per file, highest first
    python tools/count_any.py --root DIR # another tree (a baseline: `git archive a078f1a src | tar -x -C DIR`)
"""

from __future__ import annotations

import ast
import contextlib
import io
import sys
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "holysheep"


@dataclass(frozen=True)
class FileCount:
    """What one file holds: `Any` types, `# type: ignore` comments and `cast(...)` calls."""

    any: int
    type_ignore: int
    cast: int


def _is_any(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "Any"
    return isinstance(node, ast.Attribute) and node.attr == "Any"


def _count_expr(node: ast.AST | None) -> int:
    """`Any` in a type expression, looking into quoted forward references too."""
    if node is None:
        return 0
    total = 0
    for sub in ast.walk(node):
        if _is_any(sub):
            total += 1
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            with contextlib.suppress(SyntaxError):
                total += _count_expr(ast.parse(sub.value, mode="eval"))
    return total


def _typed_positions(tree: ast.AST) -> set[int]:
    """ids of the nodes counted through `_count_expr` (annotations, `TypeVar` bounds)."""
    seen: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST | None] = []
        if isinstance(node, ast.arg):
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.keyword) and node.arg == "bound":
            roots.append(node.value)
        for root in roots:
            if root is not None:
                seen.update(id(sub) for sub in ast.walk(root))
    return seen


def count_source(source: str) -> FileCount:
    """Count one module's source text."""
    tree = ast.parse(source)
    typed = _typed_positions(tree)
    anys = 0
    casts = 0
    for node in ast.walk(tree):
        if id(node) in typed:
            continue
        if _is_any(node):
            anys += 1
        if isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "cast")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "cast")
        ):
            casts += 1
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            anys += _count_expr(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anys += _count_expr(node.returns)
        elif isinstance(node, ast.AnnAssign):
            anys += _count_expr(node.annotation)
        elif isinstance(node, ast.keyword) and node.arg == "bound":
            anys += _count_expr(node.value)
    ignores = sum(
        1
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT and tok.string.lstrip("# ").startswith("type: ignore")
    )
    return FileCount(any=anys, type_ignore=ignores, cast=casts)


def count_tree(root: Path = ROOT) -> dict[str, FileCount]:
    """Every module under `root`, keyed by its path relative to `root`."""
    return {
        path.relative_to(root).as_posix(): count_source(path.read_text(encoding="utf-8"))
        for path in sorted(root.rglob("*.py"))
    }


def folder(rel: str) -> str:
    """The folder a module is reported under (`_core`, `batch`, or `.` for top-level modules)."""
    return rel.split("/")[0] if "/" in rel else "."


def main(argv: list[str]) -> int:
    root = Path(argv[argv.index("--root") + 1]) if "--root" in argv else ROOT
    if (root / "src" / "holysheep").is_dir():
        root = root / "src" / "holysheep"
    counts = count_tree(root)
    if "--files" in argv:
        print("\n".join(f"{c.any:5d}  {rel}" for rel, c in sorted(counts.items(), key=lambda kv: -kv[1].any)
                        if c.any))
        return 0
    per: Counter[str] = Counter()
    for rel, c in counts.items():
        per[folder(rel)] += c.any
    print("| folder | Any |\n|---|---:|")
    for name, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {name} | {n} |")
    total = sum(c.any for c in counts.values())
    ignores = sum(c.type_ignore for c in counts.values())
    casts = sum(c.cast for c in counts.values())
    print(f"\nAny: {total}  type: ignore: {ignores}  cast: {casts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The wire-format seam (#44): the engine, the cache, the integrations, the CLI and the JSONL runner ask a
`WireFormat` (``holysheep._core.wire``) and read no chat-completions field themselves.

Forbidden there (AST, so comments and docstrings do not count): a ``ChatCompletion*`` name outside type
annotations and ``if TYPE_CHECKING`` blocks (the public result types may still name it for readers), reading
``.choices``, a usage field (``usage.prompt_tokens``, ``.completion_tokens``, ``.prompt_tokens_details``) and
reading a chat output limit from a body (``body.get("max_tokens")``, ``body["max_completion_tokens"]``)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "holysheep"
FOLDERS = ("_engine", "integrations", "cli", "batch", "cache")
USAGE_FIELDS = {"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
LIMIT_KEYS = {"max_tokens", "max_completion_tokens"}
ARGPARSE_CHOICES = {"sub", "subparsers[0]"}  # argparse's sub-parser map (cli/_app.py), not a completion's


def _type_only_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside annotations and ``if TYPE_CHECKING:`` blocks."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                mark(child)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs, node.args.vararg,
                        node.args.kwarg]:
                mark(arg.annotation if arg is not None else None)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
    return skip


def chat_reads(source: str) -> list[str]:
    """Each place ``source`` reads a chat-completions field (see the module's docstring)."""
    tree = ast.parse(source)
    skip = _type_only_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id.startswith("ChatCompletion"):
            found.append(f"{line}: {node.id}")
        elif isinstance(node, ast.alias) and node.name.startswith("ChatCompletion"):
            found.append(f"{line}: import {node.name}")
        elif isinstance(node, ast.Attribute):
            base = ast.unparse(node.value)
            if node.attr == "choices" and base not in ARGPARSE_CHOICES:
                found.append(f"{line}: {base}.choices")
            elif node.attr in USAGE_FIELDS and (base == "usage" or base.endswith(".usage") or base == "details"
                                                or node.attr.endswith("_details")):
                found.append(f"{line}: {base}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in LIMIT_KEYS:
            found.append(f"{line}: .get({node.args[0].value!r})")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, ast.Constant) and node.slice.value in LIMIT_KEYS:  # a CLI flag set: no read
            found.append(f"{line}: [{node.slice.value!r}]")
    return found


def test_no_chat_field_is_read_outside_the_wire_formats() -> None:
    offenders = []
    paths = [p for folder in FOLDERS for p in sorted((SRC / folder).rglob("*.py"))]
    assert len(paths) > 40
    for path in paths:
        for hit in chat_reads(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(SRC)}:{hit}")
    assert offenders == []


def test_the_check_catches_each_kind_of_read() -> None:
    source = '''
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from holysheep.types.chat import ChatCompletion
def f(response: ChatCompletion, body: dict) -> ChatCompletion | None:
    from holysheep.types.chat import ChatCompletionChunk
    usage = response.usage
    a = response.choices[0]
    b = usage.prompt_tokens + response.usage.completion_tokens
    c = body.get("max_tokens") or body["max_completion_tokens"]
    body["max_tokens"] = 5
    d = sub.choices
    return ChatCompletion.model_validate({})
'''
    assert chat_reads(source) == [
        "6: import ChatCompletionChunk", "8: response.choices", "9: usage.prompt_tokens",
        "9: response.usage.completion_tokens", "10: .get('max_tokens')", "10: ['max_completion_tokens']",
        "13: ChatCompletion"]

"""Find the generated blocks in the pages, rebuild them, and report the stale ones with a unified diff."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

MARK = re.compile(r"<!-- generated: (?P<name>[a-z0-9-]+) -->(?P<body>.*?)<!-- end generated -->", re.DOTALL)
OPEN = "<!-- generated: "
OPENING = re.compile(r"<!-- generated: [a-z0-9-]+ -->")  # not the `<!-- generated: NAME -->` the README shows
PAGES = ("README.md", "docs/*.md")


class GeneratedBlockError(ValueError):
    """A page's markers are malformed or name a block the registry does not have."""


@dataclass(frozen=True)
class Stale:
    """A page whose generated blocks differ from what the data gives: `names` of those blocks and the diff."""

    path: str
    names: tuple[str, ...]
    diff: str


def page_paths(root: Path) -> list[Path]:
    """The pages that may hold generated blocks: README.md and docs/*.md."""
    return [p for pattern in PAGES for p in sorted(root.glob(pattern))]


def regenerate(text: str, blocks: Mapping[str, Callable[[], str]], where: str = "page",
               cache: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """`text` with every generated block rebuilt, and the names of the blocks that changed.

    A block written on lines of its own stays there, with a blank line after its opening marker and before its
    closing one (so Markdown sees a table or a fence, not raw HTML); an inline one stays inline.
    """
    if len(OPENING.findall(text)) != len(MARK.findall(text)):
        raise GeneratedBlockError(f"{where}: a `{OPEN}NAME -->` marker has no `<!-- end generated -->` after it")
    cache = {} if cache is None else cache
    changed: list[str] = []

    def rebuild(m: re.Match[str]) -> str:
        name, old = m["name"], m["body"]
        if name not in blocks:
            raise GeneratedBlockError(f"{where}: unknown generated block {name!r}; "
                                      f"known: {', '.join(sorted(blocks))} (tools/docgen/blocks.py)")
        if name not in cache:
            cache[name] = blocks[name]().strip("\n")
        new = cache[name] if "\n" not in old else f"\n\n{cache[name]}\n\n"
        if new != old:
            changed.append(name)
        return f"{OPEN}{name} -->{new}<!-- end generated -->"

    return MARK.sub(rebuild, text), changed


def find_stale(root: Path, blocks: Mapping[str, Callable[[], str]], cache: dict[str, str] | None = None) -> list[Stale]:
    """The pages under `root` whose generated blocks are not what `blocks` write now (each written once, into
    `cache`). A registered block that no page uses is an error too: its marker was deleted or renamed.
    """
    cache = {} if cache is None else cache
    found: list[Stale] = []
    used: set[str] = set()
    for path in page_paths(root):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        used.update(m["name"] for m in MARK.finditer(text))
        new, changed = regenerate(text, blocks, rel, cache)
        if changed:
            diff = "".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                f"a/{rel}", f"b/{rel}"))
            found.append(Stale(rel, tuple(changed), diff))
    unused = sorted(set(blocks) - used)
    if unused:
        raise GeneratedBlockError(f"no page has a marker for the generated block(s) {', '.join(unused)}; add "
                                  f"`{OPEN}NAME -->` ... `<!-- end generated -->` where each belongs")
    return found


def rewrite(root: Path, blocks: Mapping[str, Callable[[], str]], cache: dict[str, str] | None = None) -> list[Stale]:
    """Rebuild every stale page under `root` in place; returns what was stale."""
    cache = {} if cache is None else cache
    stale = find_stale(root, blocks, cache)
    for s in stale:
        path = root / s.path
        path.write_text(regenerate(path.read_text(encoding="utf-8"), blocks, s.path, cache)[0], encoding="utf-8")
    return stale

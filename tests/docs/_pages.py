"""Helpers for the tests that find the code's figures in the docs pages."""

from __future__ import annotations

from functools import cache

from ._util import ROOT


@cache
def page(name: str) -> str:
    """docs/``name`` with its whitespace collapsed to single spaces."""
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def block(name: str, after: str) -> list[str]:
    """The lines of the first ```text block after ``after`` in docs/``name``."""
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    start = text.index("```text\n", text.index(after)) + len("```text\n")
    return text[start:text.index("```", start)].rstrip("\n").splitlines()


def says(name: str, *phrases: str) -> None:
    """Each phrase (whitespace-normalised) is in docs/``name``."""
    text = page(name)
    for phrase in phrases:
        assert " ".join(phrase.split()) in text, f"docs/{name} does not say: {phrase!r}"


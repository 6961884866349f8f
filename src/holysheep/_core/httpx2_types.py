"""Recognising httpx2's objects (``holysheep[httpx2]``) without importing httpx2.

By identity through ``sys.modules``, not by ``__module__``: openai-python re-exports httpx2's classes and renames
their module to ``openai``. An httpx2 object can only exist once httpx2 was imported."""

from __future__ import annotations

import sys

__all__ = ["httpx2_class", "is_httpx2"]


def httpx2_class(name: str) -> type | None:
    """``httpx2.<name>`` when httpx2 is imported, else None."""
    cls = getattr(sys.modules.get("httpx2"), name, None)
    return cls if isinstance(cls, type) else None


def is_httpx2(obj: object, name: str) -> bool:
    """True when ``obj`` is an instance of ``httpx2.<name>``."""
    cls = httpx2_class(name)
    return cls is not None and isinstance(obj, cls)

"""The accelerator registry: the packaged rows, aliases, lookup with suggestions, and user overrides."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from importlib import resources
from os import PathLike

from .._exceptions import InvalidRequestError, UnknownGPUError
from ._loader import parse_file, row_from_mapping
from ._specs import GPU
from ._text import GPUTable

__all__ = ["gpu", "gpus", "load_gpus", "register_gpus", "reset_gpus"]

_rows: dict[str, GPU] = {}
_aliases: dict[str, str] = {}


def _norm(name: str) -> str:
    """Normalise a GPU name for lookup: lower case, vendor words and separators dropped, 80GB -> 80g."""
    s = name.lower()
    s = re.sub(r"\b(nvidia|geforce|amd|instinct|intel|tesla)\b", " ", s)
    s = re.sub(r"(\d)\s*gb\b", r"\1g", s)
    return re.sub(r"[^a-z0-9]", "", s)


def _index(row: GPU) -> None:
    _rows[row.id] = row
    for key in (row.id, row.name, *row.aliases):
        _aliases[_norm(key)] = row.id


def _ensure_loaded() -> None:
    if _rows:
        return
    text = resources.files("holysheep.accelerators").joinpath("data/gpus.json").read_text(encoding="utf-8")
    for raw in json.loads(text)["gpus"]:
        _index(row_from_mapping(raw, base=None, where=f"gpus.json:{raw.get('id')}"))


def reset_gpus() -> None:
    """Drop every user override and reload the packaged table."""
    _rows.clear()
    _aliases.clear()
    _ensure_loaded()


def gpu(name: str | GPU) -> GPU:
    """Look up one accelerator by id, name or alias (``"H100"``, ``"h100-sxm"``, ``"a100 80gb"``).

    Raises ``UnknownGPUError`` naming the closest known names when nothing matches.
    """
    if isinstance(name, GPU):
        return name
    _ensure_loaded()
    key = _norm(str(name))
    if key in _aliases:
        return _rows[_aliases[key]]
    close = difflib.get_close_matches(key, list(_aliases), n=8, cutoff=0.5)
    ids: list[str] = []
    for k in close:
        if _aliases[k] not in ids:
            ids.append(_aliases[k])
    hint = ", ".join(f"{i} ({_rows[i].name})" for i in ids[:4])
    msg = f"Unknown GPU {name!r}."
    msg += f" Did you mean: {hint}?" if hint else ""
    msg += " See holysheep.hardware.gpus() for the table, or register_gpus() to add a row."
    raise UnknownGPUError(msg, field="gpu", reason="unknown GPU name")


_SORT_KEYS = {
    "bf16": lambda g: -(g.tflops("bf16") or g.tflops("fp16") or 0.0),
    "bw": lambda g: -g.bandwidth_gb_s,
    "mem": lambda g: -g.memory_gb,
    "price": lambda g: (g.price_per_hour is None, g.price_per_hour or 0.0),
    "name": lambda g: g.name.lower(),
}


def gpus(vendor: str | None = None, sort: str | None = None) -> GPUTable:
    """All accelerators, optionally filtered by ``vendor`` ("nvidia", "amd", "intel") and sorted.

    ``sort`` is ``"bf16"`` (dense BF16, else FP16, high first), ``"bw"``, ``"mem"``, ``"price"``
    (cheapest first, unpriced last) or ``"name"``; ``None`` keeps the table order.
    """
    _ensure_loaded()
    rows = [g for g in _rows.values() if vendor is None or g.vendor == vendor.lower()]
    if sort is not None:
        if sort not in _SORT_KEYS:
            raise InvalidRequestError(
                f"sort={sort!r} is not one of {', '.join(_SORT_KEYS)}.", field="sort", reason="unknown sort key"
            )
        rows.sort(key=_SORT_KEYS[sort])
    return GPUTable(rows)


def load_gpus(path: str | PathLike[str]) -> list[GPU]:
    """Parse a user CSV or JSON file into rows without registering them.

    A row whose ``id`` (or name/alias) matches a known GPU is merged onto it, so a file with just
    ``id,price_per_hour`` is enough to set your own price; a row with new id needs at least
    ``memory_gb`` and ``bandwidth_gb_s``. Column names follow ``accelerators/data/gpus.json``, or the short CSV names
    (``mem_gb``, ``bw_gbs``, ``bf16``, ``fp8_native`` ...) listed in the docs' Hardware page.
    """
    _ensure_loaded()
    return parse_file(path, _existing)


def register_gpus(source: str | PathLike[str] | Iterable[GPU]) -> list[GPU]:
    """Add or override rows from a CSV/JSON file (see ``load_gpus``) or from ``GPU`` objects."""
    _ensure_loaded()
    rows = load_gpus(source) if isinstance(source, (str, PathLike)) else list(source)
    for row in rows:
        _index(row)
    return rows


def _existing(ident: str) -> GPU | None:
    key = _norm(ident)
    return _rows[_aliases[key]] if key in _aliases else None

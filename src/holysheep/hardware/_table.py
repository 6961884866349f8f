"""The accelerator table: typed rows, aliases, lookup with suggestions, and user overrides.

The rows ship as package data (``data/gpus.json``). Every compute figure is a *dense* tensor peak
(no 2:4 structured sparsity) at FP32 accumulate; ``GPU.sparse_tflops`` derives the sparse figure as
2x dense on parts that support it. Units: GB = 1e9 bytes, GB/s = 1e9 B/s, TFLOPS/TOPS = 1e12/s.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from os import PathLike
from typing import Any

from .._exceptions import UnknownGPUError

__all__ = [
    "GPU",
    "NATIVE_KEYS",
    "PRECISIONS",
    "PRICE_KINDS",
    "PriceQuote",
    "gpu",
    "gpus",
    "load_gpus",
    "register_gpus",
    "reset_gpus",
]

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
"""Keys of ``GPU.dense_tflops``."""
NATIVE_KEYS: tuple[str, ...] = ("bf16", "fp8", "fp4", "int8", "int4")
"""Keys of ``GPU.native`` (a tensor-core / matrix-engine path exists for that precision)."""
PRICE_KINDS: tuple[str, ...] = ("list", "marketplace", "reserved")
"""``list``: provider's published on-demand rate; ``marketplace``: host-set street price;
``reserved``: published rate for prepaid capacity (e.g. AWS Capacity Blocks)."""

FAST_LINK_GB_S = 300.0
"""A GPU-to-GPU link at or above this bandwidth counts as a scale-up fabric (NVLink, Infinity Fabric,
Gaudi RoCE); below it (PCIe-only cards, 2-card bridges) tensor parallelism is penalised."""


@dataclass(frozen=True)
class PriceQuote:
    """One dated cloud price for a single GPU-hour (USD)."""

    provider: str
    usd_per_hour: float
    kind: str
    as_of: str
    source: str
    usd_per_hour_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the quote."""
        d: dict[str, Any] = {"provider": self.provider, "usd_per_hour": self.usd_per_hour}
        if self.usd_per_hour_high is not None:
            d["usd_per_hour_high"] = self.usd_per_hour_high
        d.update(kind=self.kind, as_of=self.as_of, source=self.source)
        return d


@dataclass(frozen=True)
class GPU:
    """One accelerator row. ``dense_tflops[p]`` is ``None`` where the precision has no published peak."""

    id: str
    name: str
    vendor: str
    memory_gb: float
    bandwidth_gb_s: float
    dense_tflops: Mapping[str, float | None] = field(hash=False)
    supports_sparsity: bool
    tdp_w: float | None
    prices: tuple[PriceQuote, ...]
    source: str
    as_of: str
    native: Mapping[str, bool] = field(hash=False, default_factory=dict)
    form_factor: str = ""
    arch: str = ""
    compute_capability: str | None = None
    launch_year: int | None = None
    memory_type: str = ""
    interconnect: str = ""
    gpu_link_gb_s: float | None = None
    pcie_gen: int | None = None
    devices_per_package: int = 1
    aliases: tuple[str, ...] = ()
    notes: str = ""
    unified_memory_gb: float | None = None
    """Installed RAM shared by CPU and GPU (unified-memory machines); ``memory_gb`` is the GPU's usable share."""

    def tflops(self, precision: str) -> float | None:
        """Dense peak for ``precision`` (one of ``PRECISIONS``), or ``None`` if not published."""
        return self.dense_tflops.get(precision)

    def sparse_tflops(self, precision: str) -> float | None:
        """Derived 2:4-sparse peak (2x dense) where the part supports sparsity, else ``None``."""
        dense = self.tflops(precision)
        if dense is None or not self.supports_sparsity:
            return None
        return 2 * dense

    def supports(self, precision: str) -> bool:
        """Whether the part has a native tensor path for ``precision`` (see ``NATIVE_KEYS``)."""
        return bool(self.native.get(precision, False))

    @property
    def memory_per_device_gb(self) -> float:
        """Memory of one addressable device (an MI250X module is two 64 GB devices)."""
        return self.memory_gb / self.devices_per_package

    @property
    def has_fast_interconnect(self) -> bool:
        """True when GPUs are linked by a scale-up fabric of at least ``FAST_LINK_GB_S``."""
        return self.gpu_link_gb_s is not None and self.gpu_link_gb_s >= FAST_LINK_GB_S

    @property
    def price_per_hour(self) -> float | None:
        """Representative USD per GPU-hour: the lowest *list* quote, else the lowest quote of any kind."""
        if not self.prices:
            return None
        listed = [p.usd_per_hour for p in self.prices if p.kind == "list"]
        return min(listed) if listed else min(p.usd_per_hour for p in self.prices)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the row (the same shape as ``data/gpus.json``)."""
        return {
            "id": self.id,
            "name": self.name,
            "vendor": self.vendor,
            "form_factor": self.form_factor,
            "arch": self.arch,
            "compute_capability": self.compute_capability,
            "launch_year": self.launch_year,
            "memory_gb": self.memory_gb,
            "memory_type": self.memory_type,
            "unified_memory_gb": self.unified_memory_gb,
            "bandwidth_gb_s": self.bandwidth_gb_s,
            "tdp_w": self.tdp_w,
            "dense_tflops": {p: self.dense_tflops.get(p) for p in PRECISIONS},
            "supports_sparsity": self.supports_sparsity,
            "native": {k: bool(self.native.get(k, False)) for k in NATIVE_KEYS},
            "interconnect": self.interconnect,
            "gpu_link_gb_s": self.gpu_link_gb_s,
            "pcie_gen": self.pcie_gen,
            "devices_per_package": self.devices_per_package,
            "aliases": list(self.aliases),
            "prices": [p.to_dict() for p in self.prices],
            "price_per_hour": self.price_per_hour,
            "source": self.source,
            "as_of": self.as_of,
            "notes": self.notes,
        }


class GPUTable(list[GPU]):
    """A list of ``GPU`` rows that prints as a text table and renders as HTML in Jupyter."""

    def __str__(self) -> str:
        from ._render import gpus_text

        return gpus_text(self)

    def _repr_html_(self) -> str:
        from ._render import gpus_html

        return gpus_html(self)


# --------------------------------------------------------------------------------------------- registry

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
    from ._loader import row_from_mapping

    text = resources.files("holysheep.hardware").joinpath("data/gpus.json").read_text(encoding="utf-8")
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
    from .._exceptions import InvalidRequestError

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
    ``memory_gb`` and ``bandwidth_gb_s``. Column names follow ``data/gpus.json``, or the short CSV names
    (``mem_gb``, ``bw_gbs``, ``bf16``, ``fp8_native`` ...) listed in the docs' Hardware page.
    """
    from ._loader import parse_file

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

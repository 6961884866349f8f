"""Parsing of GPU rows from the packaged JSON and from user CSV/JSON files."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

from .._exceptions import InvalidRequestError
from ._specs import GPU, NATIVE_KEYS, PRECISIONS, PRICE_KINDS, PriceQuote

__all__ = ["parse_file", "row_from_mapping"]

# Short CSV column names (as in the docs' Hardware page) -> our field names.
_RENAMES = {
    "mem_gb": "memory_gb",
    "bw_gbs": "bandwidth_gb_s",
    "launch": "launch_year",
    "cc": "compute_capability",
    "mem_type": "memory_type",
    "nvlink_gbs": "gpu_link_gb_s",
    "sparse2x": "supports_sparsity",
    "src": "source",
    "int4_tc": "int4_native",
    "mem_gib": "memory_gib",
    "cuda_gib": "cuda_total_gib",
}
_FLOAT_FIELDS = ("memory_gb", "bandwidth_gb_s", "tdp_w", "gpu_link_gb_s", "unified_memory_gb", "memory_gib",
                 "reported_mib", "cuda_total_gib")
GIB_GB = (1 << 30) / 1e9
"""GB (1e9 bytes) in one GiB: a datasheet's "24 GB" card holds 24 GiB = 25.77 GB."""
_INT_FIELDS = ("launch_year", "pcie_gen", "devices_per_package", "sms")
_STR_FIELDS = ("name", "vendor", "form_factor", "arch", "compute_capability", "memory_type", "interconnect",
               "source", "as_of", "notes", "cuda_total_source")
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}


def _bad(where: str, msg: str) -> InvalidRequestError:
    return InvalidRequestError(f"{where}: {msg}", field=where, reason=msg)


def _num(value: Any, where: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    if isinstance(value, bool):
        raise _bad(where, f"expected a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise _bad(where, f"expected a number, got {value!r}") from None
    if out < 0:
        raise _bad(where, f"must not be negative, got {value!r}")
    return out


def _flag(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise _bad(where, f"expected 1/0 or true/false, got {value!r}")


def _prices(raw: Mapping[str, object], where: str) -> tuple[PriceQuote, ...] | None:
    """Nested ``prices`` list, or flat ``price_per_hour`` (+ ``price_kind`` ...) columns; None if absent."""
    out: list[PriceQuote] = []
    if raw.get("prices") is not None:
        items = raw["prices"]
        if not isinstance(items, list):
            raise _bad(f"{where}.prices", "expected a list of price objects")
        for i, p in enumerate(items):
            if not isinstance(p, Mapping):
                raise _bad(f"{where}.prices[{i}]", "expected an object")
            out.append(_quote(p, f"{where}.prices[{i}]"))
        return tuple(out)
    flat = {k[len("price_"):]: v for k, v in raw.items() if k.startswith("price_")}
    if _num(flat.get("per_hour"), f"{where}.price_per_hour") is None:
        return None
    return (_quote({**flat, "usd_per_hour": flat["per_hour"], "provider": flat.get("provider") or "user"},
                   f"{where}.price"),)


def _quote(p: Mapping[str, object], where: str) -> PriceQuote:
    low = _num(p.get("usd_per_hour"), f"{where}.usd_per_hour")
    if low is None:
        raise _bad(f"{where}.usd_per_hour", "a price needs usd_per_hour")
    kind = str(p.get("kind") or "list")
    if kind not in PRICE_KINDS:
        raise _bad(f"{where}.kind", f"kind must be one of {', '.join(PRICE_KINDS)}, got {kind!r}")
    return PriceQuote(
        provider=str(p.get("provider") or "user"),
        usd_per_hour=low,
        kind=kind,
        as_of=str(p.get("as_of") or ""),
        source=str(p.get("source") or "user-supplied"),
        usd_per_hour_high=_num(p.get("usd_per_hour_high"), f"{where}.usd_per_hour_high"),
    )


def row_from_mapping(raw: Mapping[str, object], base: GPU | None, where: str) -> GPU:
    """Build a ``GPU`` from one mapping (nested JSON schema or flat CSV columns), merged onto ``base``."""
    data = {_RENAMES.get(k.strip(), k.strip()): v for k, v in raw.items() if k is not None}
    ident = str(data.get("id") or (base.id if base else "")).strip()
    if not ident:
        raise _bad(where, "every row needs an id")
    fields: dict[str, Any] = {}
    for f in _FLOAT_FIELDS:
        if f in data and data[f] not in (None, ""):
            fields[f] = _num(data[f], f"{where}.{f}")
    for f in _INT_FIELDS:
        if f in data and data[f] not in (None, ""):
            v = _num(data[f], f"{where}.{f}")
            fields[f] = None if v is None else int(v)
    for f in _STR_FIELDS:
        if f in data and data[f] is not None:
            fields[f] = str(data[f])
    if "supports_sparsity" in data:
        fields["supports_sparsity"] = _flag(data["supports_sparsity"], f"{where}.supports_sparsity")
    if "aliases" in data:
        al = data["aliases"]
        parts = al if isinstance(al, list) else str(al).split("|")
        fields["aliases"] = tuple(str(a).strip() for a in parts if str(a).strip())

    tflops: dict[str, float | None] = dict(base.dense_tflops) if base else dict.fromkeys(PRECISIONS)
    nested_t = data.get("dense_tflops")
    src_t = nested_t if isinstance(nested_t, Mapping) else data
    for p in PRECISIONS:
        if p in src_t:
            tflops[p] = _num(src_t[p], f"{where}.{p}")
    native: dict[str, bool] = dict(base.native) if base else dict.fromkeys(NATIVE_KEYS, False)
    nested_n = data.get("native")
    for k in NATIVE_KEYS:
        if isinstance(nested_n, Mapping) and k in nested_n:
            native[k] = _flag(nested_n[k], f"{where}.native.{k}")
        elif f"{k}_native" in data:
            native[k] = _flag(data[f"{k}_native"], f"{where}.{k}_native")
    if base is None and not isinstance(nested_n, Mapping) and "int8_native" not in data:
        native["int8"] = tflops["int8"] is not None
    prices = _prices(data, where)

    if fields.get("memory_gb") in (None, 0) and (fields.get("reported_mib") or fields.get("memory_gib")):
        mib, gib = fields.get("reported_mib"), fields.get("memory_gib")
        fields["memory_gb"] = round(mib * (1 << 20) / 1e9 if mib else (gib or 0) * GIB_GB, 2)
    if base is not None:
        merged = replace(base, **fields, dense_tflops=tflops, native=native)
        return replace(merged, prices=prices) if prices is not None else merged
    for need in ("memory_gb", "bandwidth_gb_s"):
        if fields.get(need) in (None, 0):
            also = " (or memory_gib)" if need == "memory_gb" else ""
            raise _bad(f"{where}.{need}", f"new GPU {ident!r} needs a positive {need}{also}")
    return GPU(
        id=ident,
        name=fields.pop("name", None) or ident,
        vendor=(fields.pop("vendor", None) or "unknown").lower(),
        memory_gb=fields.pop("memory_gb"),
        bandwidth_gb_s=fields.pop("bandwidth_gb_s"),
        dense_tflops=tflops,
        supports_sparsity=fields.pop("supports_sparsity", False),
        tdp_w=fields.pop("tdp_w", None),
        prices=prices or (),
        source=fields.pop("source", None) or "user-supplied",
        as_of=fields.pop("as_of", None) or "",
        native=native,
        **fields,
    )


def parse_file(path: str | PathLike[str], existing: Callable[[str], GPU | None]) -> list[GPU]:
    """Rows from a ``.csv`` or ``.json`` file; ``existing(id)`` returns the row to merge onto, if any."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidRequestError(f"cannot read GPU file {str(p)!r}: {exc}", field="path") from None
    raws: list[tuple[str, Mapping[str, object]]] = []
    if p.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"{p.name}: invalid JSON ({exc})", field="path") from None
        items = doc.get("gpus") if isinstance(doc, dict) else doc
        if not isinstance(items, list) or not all(isinstance(r, Mapping) for r in items):
            raise InvalidRequestError(
                f"{p.name}: expected a list of GPU objects or {{\"gpus\": [...]}}", field="path"
            )
        raws = [(f"{p.name}[{i}]", r) for i, r in enumerate(items)]
    elif p.suffix.lower() == ".csv":
        reader = csv.DictReader(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        raws = [(f"{p.name}:row {i + 1}", r) for i, r in enumerate(reader)]
    else:
        raise InvalidRequestError(
            f"GPU file {p.name!r} must end in .csv or .json", field="path", reason="unsupported file type"
        )
    rows = []
    for where, raw in raws:
        ident = str(raw.get("id") or "").strip()
        if not ident:
            raise _bad(where, "every row needs an id")
        rows.append(row_from_mapping(raw, existing(ident), where))
    return rows

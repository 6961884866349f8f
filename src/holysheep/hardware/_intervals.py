"""Calibrated 80 % ranges for decode speed, from the speed model's held-out errors.

Each option's ``decode_interval`` is ``(low, high)``: the range in which 80 % of published figures like this
one fell, read from ``data/speed_intervals.json``. That file holds, per group of validation rows (runtime,
GPU memory kind, batch 1 or batched; ``interval_key``), the 10th and 90th percentiles of
``log(modelled / published)`` with every row predicted by a model fitted without its own publication
(leave-one-source-out, ``tests/hardware/crossval.py``). A group with fewer than ``MIN_ROWS`` rows or rows from
fewer than ``MIN_SOURCES`` publications uses the pooled errors of every row at 5-95 % (wider: an option in
an unchecked regime is less certain). ``build_table`` is the one rule; ``python tools/gen_intervals.py``
rewrites the file and ``tests/hardware/test_speed_intervals.py`` checks that it is current.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import TypedDict

from .._core.percentile import percentile
from ..accelerators import GPU

__all__ = ["GROUP_QUANTILE", "MIN_ROWS", "MIN_SOURCES", "POOLED_QUANTILE", "Quantiles", "build_table",
           "decode_interval", "interval_key", "memory_kind", "overlap"]

GROUP_QUANTILE = 0.10
"""A group's range: its 10th to 90th percentile of held-out log errors (an 80 % range)."""
POOLED_QUANTILE = 0.05
"""The fallback: every row's 5th to 95th percentile (a 90 % range, wider for a regime few rows check)."""
MIN_ROWS = 8
MIN_SOURCES = 2
"""A group's own range needs this many rows from this many publications (errors within one are correlated)."""


class Quantiles(TypedDict):
    low: float  # lower quantile of log(modelled / published)
    high: float  # upper quantile
    rows: int
    sources: int


def memory_kind(g: GPU) -> str:
    """``"HBM"``, ``"unified"`` (Apple) or ``"GDDR"``: the GPU family a range is read for."""
    kind = (g.memory_type or "").upper()
    return "HBM" if kind.startswith("HBM") else "unified" if g.vendor == "apple" else "GDDR"


def interval_key(runtime: str, g: GPU, batch: int) -> str:
    """The group a speed figure's range comes from: ``"vllm/HBM/batch 1"``, ``"llama.cpp/GDDR/batched"``."""
    return f"{runtime}/{memory_kind(g)}/{'batch 1' if batch <= 1 else 'batched'}"


def _share(values: list[float], p: float) -> float:
    """The value below which a share ``p`` (0-1) lies: the code base's one percentile (``_core.percentile``)."""
    got = percentile(values, 100 * p)
    if got is None:
        raise ValueError("no values")
    return got


def build_table(errors: Iterable[tuple[str, str, float]]) -> dict[str, Quantiles]:
    """Per ``interval_key`` (and ``"pooled"``), the quantiles of ``(key, source, log error)`` triples."""
    rows = list(errors)
    out: dict[str, Quantiles] = {}

    def q(es: list[float], p: float, n_src: int) -> Quantiles:
        return {"low": round(_share(es, p), 4), "high": round(_share(es, 1 - p), 4), "rows": len(es),
                "sources": n_src}

    for key in sorted({k for k, _, _ in rows}):
        es = [e for k, _, e in rows if k == key]
        n_src = len({s for k, s, _ in rows if k == key})
        if len(es) >= MIN_ROWS and n_src >= MIN_SOURCES:
            out[key] = q(es, GROUP_QUANTILE, n_src)
    out["pooled"] = q([e for _, _, e in rows], POOLED_QUANTILE, len({s for _, s, _ in rows}))
    return out


@lru_cache(maxsize=1)
def _table() -> dict[str, Quantiles]:
    text = resources.files("holysheep.hardware").joinpath("data/speed_intervals.json").read_text(encoding="utf-8")
    groups: dict[str, Quantiles] = json.loads(text)["groups"]
    return groups


def decode_interval(tok_s: float, key: str, table: dict[str, Quantiles] | None = None) -> tuple[float, float]:
    """``(low, high)`` around the modelled ``tok_s`` for a figure of group ``key`` (``interval_key``): the
    published figure is ``modelled / exp(error)``, so the high error quantile sets the low end."""
    t = _table() if table is None else table
    q = t.get(key) or t["pooled"]
    return tok_s * math.exp(-q["high"]), tok_s * math.exp(-q["low"])


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    """Whether two ranges share a value (two options the model cannot rank by speed)."""
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]

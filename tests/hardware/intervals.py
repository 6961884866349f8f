"""The decode ranges' table (``hardware/data/speed_intervals.json``) from the held-out errors, and its
held-out coverage: each publication's rows scored with ranges built without that publication's errors.

``python tools/gen_intervals.py`` writes ``table()`` to the data file; ``test_speed_intervals.py`` checks it.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

from holysheep.hardware._intervals import Quantiles, build_table, decode_interval, interval_key

from .crossval import cases, held_out_errors


def _triples() -> list[tuple[str, str, float]]:
    return [(interval_key(str(c.row["runtime"]), c.gpu, int(c.row["batch"])), c.group, e)
            for c, e in zip(cases(), held_out_errors(), strict=True)]


def table() -> dict[str, Quantiles]:
    """The shipped table: every row's held-out error."""
    return build_table(_triples())


@dataclass(frozen=True)
class Coverage:
    rows: int
    covered: float  # share of rows whose published figure lies inside the range
    median_width: float  # median high / low
    per_source: dict[str, tuple[int, float]]  # publication -> (rows, share covered)
    pooled_rows: int  # rows whose range fell back to the pooled one


@lru_cache(maxsize=1)
def held_out_coverage() -> Coverage:
    """Each publication's rows: centre from the fit without it, range from the other publications' errors."""
    triples = _triples()
    hits: dict[str, list[bool]] = {}
    widths: list[float] = []
    pooled = 0
    for g in sorted({s for _, s, _ in triples}):
        t = build_table(x for x in triples if x[1] != g)
        for key, src, e in triples:
            if src != g:
                continue
            pooled += key not in t
            modelled = 100.0 * math.exp(e)  # published = 100
            low, high = decode_interval(modelled, key, t)
            hits.setdefault(g, []).append(low <= 100.0 <= high)
            widths.append(high / low)
    every = [h for v in hits.values() for h in v]
    return Coverage(len(every), sum(every) / len(every), statistics.median(widths),
                    {g: (len(v), sum(v) / len(v)) for g, v in hits.items()}, pooled)

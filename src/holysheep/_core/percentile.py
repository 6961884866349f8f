"""The one percentile of the code base (stream metrics, ``holysheep bench``): linear interpolation between
the closest ranks, as ``numpy.percentile``'s default and ``statistics.quantiles(method="inclusive")``."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation; ``None`` for no values."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)

"""One percentile for the code base (``holysheep._core.percentile``): exact values, and no second copy."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

import holysheep
from holysheep._core.percentile import percentile

SRC = Path(holysheep.__file__).parent
# _stream_state.py belongs to the transport work running in parallel: its private `_p95` is the same
# interpolation and should become `percentile(gaps, 95)`; then this set is empty.
PENDING: set[str] = set()


def test_exact_values() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([10.0, 20.0], 0) == 10.0 and percentile([10.0, 20.0], 100) == 20.0
    with pytest.raises(ValueError, match=r"within 0\.\.100"):
        percentile([1.0], 101)


def test_agrees_with_the_standard_library() -> None:
    values = [0.31, 0.05, 0.9, 0.47, 0.12, 0.66, 0.2]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (5, 25, 50, 75, 95, 99):
        assert percentile(values, q) == pytest.approx(cuts[q - 1])


def test_the_bench_uses_the_one_percentile() -> None:
    from holysheep.cli import _bench_stats

    assert _bench_stats.percentile is percentile


def test_no_other_module_defines_a_percentile() -> None:
    pattern = re.compile(r"^\s*def (\w*(percentile|quantile)\w*|_?p\d\d)\(", re.MULTILINE)
    owners = {str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if pattern.search(path.read_text())}
    assert owners - PENDING == {"_core/percentile.py"}

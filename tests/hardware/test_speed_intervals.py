"""Decode ranges (``_intervals``): the shipped quantiles are the held-out errors' own, their held-out coverage
meets the issue's target, and the picker, its text and ``--json`` carry them."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from holysheep.hardware import gpu, pick_hardware
from holysheep.hardware._intervals import _table, build_table, decode_interval, interval_key, overlap
from holysheep.hardware._result import HardwareOption, PickResult, pick_text

from .intervals import held_out_coverage

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_file_is_what_the_tool_writes() -> None:
    sys.path.insert(0, str(ROOT))
    from tools.gen_intervals import DATA, render

    assert DATA.read_text(encoding="utf-8") == render()


def test_held_out_coverage_meets_the_target() -> None:
    """Centre from the fit without the publication, range from the other publications' errors only."""
    cov = held_out_coverage()
    assert (cov.rows, round(cov.covered, 3), round(cov.median_width, 3), cov.pooled_rows) == (358, 0.757, 1.938, 287)
    assert 0.75 <= cov.covered <= 0.85 and cov.median_width <= 2.0


def test_widths_come_from_the_group_not_a_constant() -> None:
    t = _table()
    width = {k: math.exp(q["high"] - q["low"]) for k, q in t.items()}
    assert round(width["llama.cpp/GDDR/batch 1"], 3) == 1.278
    assert round(width["vllm/HBM/batch 1"], 3) == 1.91
    assert round(width["pooled"], 3) == 2.25
    assert t["vllm/HBM/batch 1"]["rows"] == 90 and t["vllm/HBM/batch 1"]["sources"] == 3


def test_build_table_falls_back_for_thin_or_single_source_groups() -> None:
    rows = [("a", f"s{i % 2}", i / 100) for i in range(8)] + [("b", "s1", 0.5)] * 4 + [("b", "s2", 0.5)] * 3
    rows += [("c", "s1", -0.2)] * 9  # enough rows, one publication
    t = build_table(rows)
    assert set(t) == {"a", "pooled"}  # a: 8 rows from 2; b: 7 rows; c: one publication
    assert (t["a"]["rows"], t["a"]["sources"], t["pooled"]["rows"], t["pooled"]["sources"]) == (8, 2, 24, 3)
    assert decode_interval(100.0, "b", t) == decode_interval(100.0, "nowhere", t)  # both pooled


def test_build_table_exact_quantiles() -> None:
    rows = [("a", f"s{i % 2}", i / 100) for i in range(11)]  # 0.00 .. 0.10 from two publications
    t = build_table(rows)
    assert t["a"] == {"low": 0.01, "high": 0.09, "rows": 11, "sources": 2}
    assert t["pooled"] == {"low": 0.005, "high": 0.095, "rows": 11, "sources": 2}
    low, high = decode_interval(200.0, "a", t)  # published = modelled / exp(error)
    assert (round(low, 4), round(high, 4)) == (round(200 * math.exp(-0.09), 4), round(200 * math.exp(-0.01), 4))


def test_interval_key_groups_runtime_memory_and_regime() -> None:
    assert interval_key("vllm", gpu("H100"), 1) == "vllm/HBM/batch 1"
    assert interval_key("llama.cpp", gpu("4090"), 8) == "llama.cpp/GDDR/batched"
    assert interval_key("mlx", gpu("m2-ultra"), 1) == "mlx/unified/batch 1"
    assert overlap((1.0, 2.0), (2.0, 3.0)) and not overlap((1.0, 2.0), (2.1, 3.0)) and not overlap(None, (1, 2))


def test_every_option_carries_its_range() -> None:
    res = pick_hardware("llama-3.1-8b", quant="bf16", context=2048, batch=8, runtime="vllm",
                        gpus=["H100", "4090"], gpu_count=1)
    by = {o.gpu.id: o for o in res}
    h100, rtx = by["h100-sxm"], by["rtx4090"]
    assert h100.decode_tokens_per_s is not None and rtx.decode_tokens_per_s is not None
    assert h100.decode_interval == decode_interval(h100.decode_tokens_per_s, "vllm/HBM/batched")  # pooled
    assert rtx.decode_interval == decode_interval(rtx.decode_tokens_per_s, "vllm/GDDR/batched")
    q = _table()["vllm/GDDR/batched"]
    assert rtx.decode_interval[0] == pytest.approx(rtx.decode_tokens_per_s * math.exp(-q["high"]))
    d = rtx.to_dict()
    assert d["decode_tokens_per_s_interval"] == list(rtx.decode_interval) and "decode_interval" not in d
    low, high = rtx.decode_interval
    assert f"{rtx.decode_tokens_per_s:,.1f} ({low:,.0f}–{high:,.0f})" in pick_text(res)


def _option(name: str, tok: float, interval: tuple[float, float]) -> HardwareOption:
    return HardwareOption(gpu(name), 1, True, 10.0, 80.0, 70.0, 1, decode_tokens_per_s=tok, decode_interval=interval)


def test_the_picker_says_when_neighbouring_ranges_overlap() -> None:
    a, b, c = _option("H100", 300.0, (240.0, 390.0)), _option("A100", 250.0, (200.0, 310.0)), \
        _option("L40S", 100.0, (80.0, 130.0))
    res = PickResult([a, b, c], [], "throughput")
    assert res.overlapping() == [(a, b)]
    text = pick_text(res)
    assert "300.0 (240–390)" in text and "100.0 (80–130)" in text
    assert ("  decode ranges overlap, so the model cannot tell which is faster: "
            "1x H100 SXM5 80GB and 1x A100 80GB SXM4") in text.splitlines()
    assert "overlap" not in pick_text(PickResult([a, c], [], "throughput"))

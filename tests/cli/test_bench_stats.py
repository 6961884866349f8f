"""The pure statistics behind ``holysheep bench``."""

from __future__ import annotations

import statistics

import pytest

from holysheep.cli._bench_stats import Sample, percentile, sample_fields, summarize, tpot


def test_percentile_interpolates_like_numpy() -> None:
    values = [0.4, 0.1, 0.3, 0.2]
    assert percentile(values, 0) == 0.1 and percentile(values, 100) == 0.4
    assert percentile(values, 50) == pytest.approx(0.25)
    assert percentile(values, 95) == pytest.approx(0.385)  # numpy.percentile(..., 95)
    assert percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert percentile([], 50) is None and percentile([7.0], 99) == 7.0
    assert percentile(values, 50) == statistics.median(values)
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_tpot_excludes_the_first_token() -> None:
    assert tpot(1.2, 0.2, 51) == pytest.approx(0.02)
    assert tpot(1.0, 0.2, 1) is None and tpot(None, 0.2, 10) is None


def _ok(i: int, ttft: float, itl: float, tokens: int = 10) -> Sample:
    e2e = ttft + itl * (tokens - 1)
    return Sample(model="m", index=i, ok=True, started_s=0.0, e2e_s=e2e, ttft_s=ttft, itl_mean_s=itl,
                  tpot_s=tpot(e2e, ttft, tokens), prompt_tokens=150, completion_tokens=tokens,
                  output_tok_s=tokens / e2e, cost_usd=0.001)


def test_summary_aggregates_per_request_itl_means_equally() -> None:
    samples = [_ok(0, 0.1, 0.01), _ok(1, 0.3, 0.03, tokens=100),
               Sample(model="m", index=2, ok=False, started_s=0.0, error_type="RateLimitError", status_code=429)]
    s = summarize("m", samples, wall_s=4.0, input_per_m=1.0, output_per_m=2.0)
    assert (s["requests"], s["succeeded"], s["failed"]) == (3, 2, 1)
    assert s["success_rate"] == pytest.approx(2 / 3) and s["errors"] == {"RateLimitError": 1}
    assert s["itl_s"]["mean"] == pytest.approx(0.02)  # mean of per-request means, not token-weighted
    assert s["ttft_s"]["p50"] == pytest.approx(0.2)
    assert s["output_throughput_tok_s"] == pytest.approx(110 / 4.0)
    assert s["cost_usd"] == pytest.approx(0.002)
    assert s["cost_per_m_tokens"] == pytest.approx(0.002 / 410 * 1e6)
    assert s["price_per_m"] == {"input": 1.0, "output": 2.0}


def test_summary_of_only_failures_has_no_latencies() -> None:
    s = summarize("m", [Sample(model="m", index=0, ok=False, started_s=0.0, error_type="APIConnectionError")],
                  wall_s=0.1)
    assert s["success_rate"] == 0.0 and s["ttft_s"]["p50"] is None and s["output_throughput_tok_s"] is None
    assert s["cost_usd"] is None and "error_type" in sample_fields()

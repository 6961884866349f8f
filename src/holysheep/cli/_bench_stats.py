"""Pure statistics for ``holysheep bench``: per-request samples in, per-model summary out.

Percentiles are the code base's one ``percentile`` (linear interpolation between order statistics, numpy's
default, as vLLM's benchmark_serving uses). Definitions are in ``docs/cli.md``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields

from holysheep._core.percentile import percentile

__all__ = ["Sample", "percentile", "sample_fields", "summarize"]


@dataclass
class Sample:
    """One benchmark request. Latencies are seconds; ``None`` when not measured (failed request)."""

    model: str
    index: int
    ok: bool
    started_s: float
    e2e_s: float | None = None
    ttft_s: float | None = None
    itl_mean_s: float | None = None
    itl_p95_s: float | None = None
    tpot_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunks: int = 0
    output_tok_s: float | None = None
    cost_usd: float | None = None
    error_type: str | None = None
    status_code: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def sample_fields() -> list[str]:
    """Column names of a sample, in CSV order."""
    return [f.name for f in fields(Sample)]


def tpot(e2e_s: float | None, ttft_s: float | None, completion_tokens: int | None) -> float | None:
    """Time per output token after the first: ``(e2e - ttft) / (tokens - 1)``; ``None`` below 2 tokens."""
    if e2e_s is None or ttft_s is None or not completion_tokens or completion_tokens < 2:
        return None
    return (e2e_s - ttft_s) / (completion_tokens - 1)


def _vals(samples: Iterable[Sample], name: str) -> list[float]:
    return [v for s in samples if (v := getattr(s, name)) is not None]


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(
    model: str,
    samples: Sequence[Sample],
    *,
    wall_s: float,
    input_per_m: float | None = None,
    output_per_m: float | None = None,
) -> dict[str, object]:
    """Per-model summary of ``samples`` (all of one model) measured over ``wall_s`` seconds of wall time."""
    ok = [s for s in samples if s.ok]
    ttft, e2e = _vals(ok, "ttft_s"), _vals(ok, "e2e_s")
    itl, tp = _vals(ok, "itl_mean_s"), _vals(ok, "tpot_s")
    out_tokens = sum(s.completion_tokens or 0 for s in ok)
    in_tokens = sum(s.prompt_tokens or 0 for s in ok)
    costs = [s.cost_usd for s in ok if s.cost_usd is not None]
    cost = sum(costs) if costs and len(costs) == len(ok) else None
    errors = Counter(s.error_type or "error" for s in samples if not s.ok)
    total_tokens = in_tokens + out_tokens
    return {
        "model": model,
        "requests": len(samples),
        "succeeded": len(ok),
        "failed": len(samples) - len(ok),
        "success_rate": (len(ok) / len(samples)) if samples else None,
        "errors": dict(sorted(errors.items())),
        "wall_s": wall_s,
        "ttft_s": {"mean": _mean(ttft), "p50": percentile(ttft, 50), "p95": percentile(ttft, 95),
                   "p99": percentile(ttft, 99)},
        "itl_s": {"mean": _mean(itl), "p50": percentile(itl, 50), "p95": percentile(itl, 95)},
        "tpot_s": {"mean": _mean(tp), "p50": percentile(tp, 50), "p95": percentile(tp, 95)},
        "e2e_s": {"mean": _mean(e2e), "p50": percentile(e2e, 50), "p95": percentile(e2e, 95),
                  "p99": percentile(e2e, 99)},
        "output_tok_s_per_request": {"mean": _mean(_vals(ok, "output_tok_s")),
                                     "p50": percentile(_vals(ok, "output_tok_s"), 50)},
        "output_throughput_tok_s": (out_tokens / wall_s) if wall_s > 0 and ok else None,
        "prompt_tokens": in_tokens,
        "completion_tokens": out_tokens,
        "price_per_m": {"input": input_per_m, "output": output_per_m},
        "cost_usd": cost,
        "cost_per_m_tokens": (cost / total_tokens * 1e6) if cost is not None and total_tokens else None,
    }

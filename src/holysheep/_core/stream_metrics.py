"""A stream's latency figures (`StreamMetrics`), computed from what `StreamState` stamped (pure)."""

from __future__ import annotations

import statistics
from array import array
from dataclasses import dataclass

from holysheep._core.percentile import percentile

__all__ = ["StreamMetrics", "stream_metrics"]


@dataclass(frozen=True)
class StreamMetrics:
    """Latency of one stream, measured on the client.

    ``ttft_s``: request sent → first chunk carrying output (reasoning, content or a tool call).
    ``time_to_first_reasoning_s`` / ``time_to_first_content_s``: to the first reasoning token and to the first
    answer token (content or a tool call); each ``None`` when the stream had none. ``itl_*``: gaps between
    successive output chunks (mean over this stream's gaps, as vLLM's benchmark_serving does per request; the
    percentiles are exact up to 65,536 gaps, then read from an evenly spaced sample of them, see `sample_gap`).
    ``total_s``: request sent → end of stream. ``tokens_per_s``: completion tokens / ``total_s``.
    ``completion_tokens`` comes from ``usage`` when the server sends it, else the output-chunk count.
    """

    ttft_s: float | None
    itl_mean_s: float | None
    itl_p50_s: float | None
    itl_p95_s: float | None
    chunks: int
    completion_tokens: int
    total_s: float | None
    tokens_per_s: float | None
    time_to_first_reasoning_s: float | None = None
    time_to_first_content_s: float | None = None


def stream_metrics(started_at: float, ended_at: float | None, first_out: float | None, last_out: float,
                   outputs: int, gaps: array[float], chunks: int, usage_tokens: int | None,
                   first_reasoning: float | None, first_answer: float | None) -> StreamMetrics:
    """The figures of a stream that started at ``started_at`` and had ``outputs`` output chunks, the first at
    ``first_out`` and the last at ``last_out``, with ``gaps`` (every gap between them, or an even sample)."""
    ttft = first_out - started_at if first_out is not None else None
    count = outputs - 1  # every gap: the sample may hold fewer
    total = (ended_at - started_at) if ended_at is not None else None
    tokens = usage_tokens if usage_tokens else outputs
    return StreamMetrics(
        ttft_s=ttft,
        itl_mean_s=(last_out - first_out) / count if first_out is not None and count > 0 else None,
        itl_p50_s=statistics.median(gaps) if gaps else None,
        itl_p95_s=percentile(gaps, 95),
        chunks=chunks,
        completion_tokens=tokens,
        total_s=total,
        tokens_per_s=(tokens / total) if total else None,
        time_to_first_reasoning_s=first_reasoning - started_at if first_reasoning is not None else None,
        time_to_first_content_s=first_answer - started_at if first_answer is not None else None,
    )

"""The figures docs/observability.md quotes are the ones `benchmarks/results.json` holds (no drift when the
benchmark is re-run and the page is not, or the other way round)."""

from __future__ import annotations

import json

from ._util import ROOT


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.index("\n## ", start)
    return text[start:end]


def test_the_tracing_cost_table_matches_the_benchmark_results() -> None:
    counted = json.loads((ROOT / "benchmarks" / "results.json").read_text())["otel_overhead"]["instructions"]
    short, long = counted["reply_words_16"], counted["reply_words_330"]
    ratio = short["ratio"]
    cost = _section((ROOT / "docs" / "observability.md").read_text(), "### Cost")
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in cost.splitlines()
            if line.startswith("| ") and line.count("|") == 3}
    by_side = {
        "traces_noop_tracer": "the instrumentation on the API's `NoOpTracerProvider`",
        "bare_sdk_spans": "a hook that only starts and ends one bare SDK span",
        "traces_unsampled": "`instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))`",
        "traces": "`instrument(tracer_provider=TracerProvider())`, no exporter",
        "traces_metrics": "the same with an SDK `MeterProvider` and a reader",
    }
    for side, label in by_side.items():
        (shown,) = [v for k, v in rows.items() if k.startswith(label)]
        assert shown.strip("*") == f"{ratio[side]:.2f}x", (side, shown, ratio[side])
    prose = " ".join(cost.split())
    assert f"{round(short['k_instructions_per_item']['off'])}k instructions per item" in prose
    assert f"`sdk_span_share` {short['sdk_span_share']:.2f}x" in prose
    assert f"({round(long['k_instructions_per_item']['off'])}k instructions with nothing registered), the traces " \
           f"ratio is {long['ratio']['traces']:.2f}x" in prose

"""The figures docs/observability.md quotes are the ones `benchmarks/results.json` holds (no drift when the
benchmark is re-run and the page is not, or the other way round). Whole tables taken from the data are generated
by `tools/gen_docs.py` and checked in tests/docs/test_generated.py; the figures quoted in prose are checked here."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from ._util import ROOT


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.index("\n## ", start)
    return text[start:end]


def test_the_tracing_cost_prose_matches_the_benchmark_results() -> None:
    """The table is generated (`otel-cost`, tests/docs/test_generated.py); the prose around it is checked here."""
    counted = json.loads((ROOT / "benchmarks" / "results.json").read_text())["otel_overhead"]["instructions"]
    short, long = counted["reply_words_16"], counted["reply_words_330"]
    cost = _section((ROOT / "docs" / "observability.md").read_text(), "### Cost")
    prose = " ".join(cost.split())
    assert f"{round(short['k_instructions_per_item']['off'])}k instructions per item" in prose
    assert f"`sdk_span_share` {short['sdk_span_share']:.2f}x" in prose
    assert f"({round(long['k_instructions_per_item']['off'])}k instructions with nothing registered), the traces " \
           f"ratio is {long['ratio']['traces']:.2f}x" in prose


# --- docs/performance.md: every figure its tables take from benchmarks/results.json ------------------------


def _results() -> dict[str, Any]:
    return dict(json.loads((ROOT / "benchmarks" / "results.json").read_text()))


def _rows(text: str) -> dict[str, list[str]]:
    """A Markdown table's rows, keyed by their first cell."""
    return {cells[0]: cells[1:] for line in text.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}


def _2(x: float) -> str:
    """``x`` to 2 decimals, half up from the figure as results.json writes it (0.955 -> 0.96)."""
    return str(Decimal(str(x)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def test_the_longer_runs_quote_the_targets_of_the_benchmark_results() -> None:
    """The Results table is generated (`performance-results`, tests/docs/test_generated.py); the hand-written
    table of longer runs under it (figures results.json does not hold) quotes run.py's targets."""
    targets = _results()["targets"]
    text = (ROOT / "docs" / "performance.md").read_text()
    rows = _rows(text[text.index("| Longer run |"):text.index("**Batch at 256.**")])
    quoted = {"Batch wall, 2,000 × 50 ms at 64, vs a bare aiohttp worker pool": "batch_64_vs_bare_aiohttp",
              "Batch wall, 4,000 × 50 ms at 256, vs the bare pool": "batch_256_vs_bare_aiohttp",
              'Batch wall, `http_backend="httpx"`, 2,000 × 50 ms at 64': "batch_httpx_64_vs_ideal",
              "`import holysheep` + `Client()`, fresh venv (`pip install holysheep openai`)": "import_vs_openai",
              "the same in the dev venv (click, rich and pygments installed)": "import_vs_openai"}
    for label, key in quoted.items():
        assert rows[label][3] == f"≤ {targets[key]:g}×", label


def test_the_in_flight_table_and_the_http2_prose_match_the_benchmark_results() -> None:
    r = _results()
    text = (ROOT / "docs" / "performance.md").read_text()
    rows = _rows(_section(text, "## Thousands in flight"))
    for key, label in [("3000", "6,000 requests × 8 s, 3,000 in flight"),
                       ("1000", "3,000 requests × 8 s, 1,000 in flight")]:
        m = r["inflight"][key]
        pairs = ", ".join(_2(p) for p in m["pairs"])
        floor = m.get("floor_worker_pool_s", m.get("bare_aiohttp_s"))  # the worker pool since issue 37
        assert rows[label] == [f"{m['ideal_s']:.1f} s", f"{m['batch_s']:.2f} s", f"{floor:.2f} s",
                               f"**{_2(m['ratio'])}x** ({pairs})", rows[label][4]], label
    big = r["inflight"]["rss_10000"]
    assert rows["10,000 requests × 2 s, 10,000 in flight"][1:4:2] == [f"{big['batch_s']:.2f} s",
                                                                      f"peak RSS **{round(big['peak_rss_mib'])} MiB**"]
    assert f"so the peak is {big['peak_in_flight']:,}" in " ".join(text.split())

    # The FakeServer and HTTP/2 tables are generated (`fake-server-table`, `http2-table`); the prose quoting them
    # is checked here.
    h2 = _section(text, "## HTTP/2")
    prose = " ".join(h2.split())
    at64, at256 = r["http2"]["results"]["2000x50ms_at_64"], r["http2"]["results"]["2000x50ms_at_256"]
    assert (f"{at64['h2_vs_h1_cpu']:.2f}x the CPU per request and {at64['h2_vs_h1_wall']:.2f}x the wall at 64 in "
            f"flight; {at256['h2_vs_h1_cpu']:.2f}x the CPU and {at256['h2_vs_h1_wall']:.2f}x the wall at 256") in prose
    assert f"it costs {at64['h2_vs_aiohttp_cpu']:.1f}x (64) and {at256['h2_vs_aiohttp_cpu']:.1f}x (256)" in prose


# --- the sizes and defaults configuration.md, performance.md and batch.md quote ------------------------------------


def test_the_httpx_shard_size_the_docs_quote_is_the_code_s() -> None:
    from holysheep._transports.backends import SHARD_CONNECTIONS

    config = " ".join((ROOT / "docs" / "configuration.md").read_text().split())
    perf = " ".join((ROOT / "docs" / "performance.md").read_text().split())
    assert f"shards its own pool into clients of at most {SHARD_CONNECTIONS} connections" in config
    assert f"several pools of at most {SHARD_CONNECTIONS} connections" in perf


def test_the_batch_defaults_the_docs_quote_are_the_code_s() -> None:
    from holysheep.batch import DEFAULTS

    assert {k: DEFAULTS[k] for k in ("concurrency", "rpm", "tpm", "retry_budget", "outage_after_s",
                                     "outage_failure_ratio", "outage_window", "max_pause_s", "retry_window_s",
                                     "gc_threshold", "max_retries")} == {
        "concurrency": 16, "rpm": "auto", "tpm": "auto", "retry_budget": 0.2, "outage_after_s": 60.0,
        "outage_failure_ratio": 0.9, "outage_window": 100, "max_pause_s": 300.0, "retry_window_s": 600.0,
        "gc_threshold": 10_000, "max_retries": None}
    batch = " ".join((ROOT / "docs" / "batch.md").read_text().split())
    for quoted in ("`concurrency=16`, `rpm=\"auto\"`, `tpm=\"auto\"`", "`retry_window_s=600`",
                   "`retry_budget=0.2`", "`outage_failure_ratio` (0.9) of the last `outage_window` (100)",
                   "`outage_after_s` (60 s)", "`max_pause_s=300`", "`gc_threshold=10_000`"):
        assert quoted in batch, quoted


def test_the_tracing_cost_against_the_peer_matches_the_benchmark_results() -> None:
    """docs/observability.md's prose on holysheep + its instrumentor against openai + the official one (the table
    is generated: `otel-peer`)."""
    peer = _results()["otel_overhead"]["peer"]
    one, many = peer["instructions_concurrency_1"], peer["instructions_concurrency_64"]
    prose = " ".join(_section((ROOT / "docs" / "observability.md").read_text(), "**Against the peer.**").split())
    assert f"`tracing_increment_ratio` {_2(one['tracing_increment_ratio'])}x" in prose
    assert all(r["meets_target"] and r["target"] == 0.5 for r in (one, many))

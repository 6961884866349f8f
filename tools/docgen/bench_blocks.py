"""The generated blocks that come from `benchmarks/results.json` (which the benchmark scripts write): one
function per table, each reading its section of the file, none keeping a copy of a figure."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _results() -> dict[str, Any]:
    """benchmarks/results.json, which the benchmark scripts write."""
    return dict(json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8")))


def _2(x: float) -> str:
    """`x` to 2 decimals, half up from the figure as results.json writes it (0.955 -> 0.96)."""
    return str(Decimal(str(x)).quantize(Decimal("0.01"), ROUND_HALF_UP))


OTEL_PEER_SIDES = {
    "openai_traced": "openai-python + `opentelemetry-instrumentation-openai-v2`",
    "holysheep_traced": "holysheep + `HolySheepInstrumentor`",
    "openai_off": "openai-python, no instrumentation",
    "holysheep_off": "holysheep, no instrumentation",
}


def otel_peer() -> str:
    """Instructions per request, holysheep and its instrumentor against openai and the official one
    (`otel_overhead.peer` of benchmarks/results.json)."""
    peer = _results()["otel_overhead"]["peer"]
    runs = (peer["instructions_concurrency_1"], peer["instructions_concurrency_64"])
    lines = ["| Side | Instructions per request, concurrency 1 | concurrency 64 |", "| --- | --- | --- |"]
    for side, label in OTEL_PEER_SIDES.items():
        cells = [f"{round(r['k_instructions_per_request'][side]):,}k" for r in runs]
        if side == "holysheep_traced":
            cells = [f"{c} (**{_2(r['ratio'])}x**)" for c, r in zip(cells, runs, strict=True)]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


OTEL_COST_SIDES = {
    "traces_noop_tracer": "the instrumentation on the API's `NoOpTracerProvider`: every hook, attribute and metric "
                          "call of holysheep's, no SDK span",
    "bare_sdk_spans": "a hook that only starts and ends one bare SDK span per call (no attributes, no metrics)",
    "traces_unsampled": "`instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))`: a batch the sampler drops",
    "traces": "`instrument(tracer_provider=TracerProvider())`, no exporter",
    "traces_metrics": "the same with an SDK `MeterProvider` and a reader",
}


def otel_cost() -> str:
    """Instructions per batch item with each instrumented side, against nothing registered
    (`otel_overhead.instructions.reply_words_16.ratio` of benchmarks/results.json); the usual setup in bold."""
    ratio = _results()["otel_overhead"]["instructions"]["reply_words_16"]["ratio"]
    lines = ["| Side | Instructions per item vs off |", "| --- | --- |"]
    for side, label in OTEL_COST_SIDES.items():
        shown = f"{ratio[side]:.2f}x"
        lines.append(f"| {label} | {f'**{shown}**' if side == 'traces' else shown} |")
    return "\n".join(lines)


HTTP2_SIDES = {"aiohttp": "`AsyncClient()` (aiohttp, HTTP/1.1)",
               "httpx-h1": '`AsyncClient(http_backend="httpx")` (HTTP/1.1)',
               "httpx-h2": "`AsyncClient(http2=True)` (httpx, HTTP/2)"}


def http2_table() -> str:
    """Each HTTP backend at each in-flight count (`http2.results` of benchmarks/results.json)."""
    lines = ["| 2,000 × 50 ms | in flight | wall (ideal) | client CPU / request | connections |", "|" + "---|" * 5]
    for key, shape in _results()["http2"]["results"].items():
        in_flight = key.rsplit("_at_", 1)[1]
        for side, label in HTTP2_SIDES.items():
            m = shape[side]
            wall = f"{m['wall_s']:.2f} s" + (f" ({shape['ideal_s']:.2f} s)" if side == "aiohttp" else "")
            lines.append(f"| {label} | {in_flight} | {wall} | {round(m['cpu_us_per_request']):,} µs | "
                         f"{m['connections']} |")
    return "\n".join(lines)


def fake_server_table() -> str:
    """FakeServer against the canned server under batch-shaped load (`fake_server` of benchmarks/results.json)."""
    fs = _results()["fake_server"]
    pairs = ", ".join(_2(p) for p in fs["pairs"])
    shape = f"{fs['requests']:,} requests × {fs['latency_s'] * 1000:g} ms, {fs['in_flight']} in flight"
    return "\n".join([
        "| shape | ideal | FakeServer | canned server | FakeServer / canned (pairs) | FakeServer / ideal | target |",
        "|" + "---|" * 7,
        f"| {shape} | {fs['ideal_s']:.2f} s | {fs['fake_server_s']:.2f} s | {fs['canned_server_s']:.2f} s | "
        f"**{_2(fs['fake_vs_canned'])}x** ({pairs}) | {_2(fs['fake_vs_ideal'])}x | ≤ {fs['target_fake_vs_canned']}x |"])


def _us(x: float) -> str:
    return f"{round(x):,} µs"


def _verdict(*pairs: tuple[float, float]) -> str:
    """``met`` when every (ratio, target) pair is within its target (ratio ≤ target), else ``missed``."""
    return "met" if all(ratio <= target for ratio, target in pairs) else "missed"


BATCH_WALLS = {  # results.json `batch` row -> (label, its ratio and target in `ratios` / `targets`)
    "wall_default_2000x64": ("Batch wall, 2,000 × 50 ms at 64, vs a bare aiohttp worker pool",
                             "batch_64_vs_bare_aiohttp"),
    "wall_default_4000x256": ("Batch wall, 4,000 × 50 ms at 256, vs the bare pool", "batch_256_vs_bare_aiohttp"),
    "wall_httpx_2000x64": ('Batch wall, `http_backend="httpx"`, 2,000 × 50 ms at 64', "batch_httpx_64_vs_ideal"),
}


def performance_results() -> str:
    """docs/performance.md's Results: the last `python benchmarks/run.py` (`sync_json_us`, `stream_us`,
    `async64_us`, `import`, `batch`, `ratios` and `targets` of benchmarks/results.json); a row is ``met`` when
    its ratio is within its target, as run.py judges it."""
    r = _results()
    sync, stream, a64, imp, batch = r["sync_json_us"], r["stream_us"], r["async64_us"], r["import"], r["batch"]
    ratios, targets = r["ratios"], r["targets"]

    def pair(name: str) -> tuple[float, float]:
        return ratios[name], targets[name]

    rows = [
        ["Sync JSON, CPU per request", _us(sync["holysheep.Client"]),
         f"openai {_us(sync['openai.OpenAI'])} · raw httpx {_us(sync['raw httpx.Client'])}",
         f"{ratios['sync_json_vs_openai']:.2f}× openai · {ratios['sync_json_vs_raw']:.2f}× raw",
         f"≤ {targets['sync_json_vs_openai']:g}× · ≤ {targets['sync_json_vs_raw']:g}×",
         _verdict(pair("sync_json_vs_openai"), pair("sync_json_vs_raw"))],
        ["SSE stream (22 events), CPU per stream", _us(stream["holysheep.Client stream"]),
         f"openai {_us(stream['openai.OpenAI stream'])} · raw httpx `iter_lines` "
         f"{_us(stream['raw httpx.Client iter_lines'])}",
         f"{ratios['stream_vs_openai']:.2f}× openai · {ratios['stream_vs_raw']:.2f}× raw",
         f"≤ {targets['stream_vs_openai']:g}× · ≤ {targets['stream_vs_raw']:g}×",
         _verdict(pair("stream_vs_openai"), pair("stream_vs_raw"))],
        ["Async, 64 in flight, CPU per request (default aiohttp)", _us(a64["holysheep.AsyncClient (aiohttp)"]),
         f"openai + aiohttp {_us(a64['openai.AsyncOpenAI (aiohttp)'])}",
         f"{ratios['async64_vs_openai_aiohttp']:.2f}×", f"≤ {targets['async64_vs_openai_aiohttp']:g}×",
         _verdict(pair("async64_vs_openai_aiohttp"))],
        ['Async, 64 in flight, `http_backend="httpx"`', _us(a64["holysheep.AsyncClient (httpx)"]),
         f"raw httpx {_us(a64['raw httpx.AsyncClient'])} · openai (httpx) {_us(a64['openai.AsyncOpenAI (httpx)'])}",
         f"{a64['holysheep.AsyncClient (httpx)'] / a64['openai.AsyncOpenAI (httpx)']:.2f}× openai (httpx)", "—", ""],
        [f"`import holysheep` + `Client()`, median of {imp['runs']} fresh interpreters",
         f"{round(imp['cases']['holysheep']['import_ms']):,} ms",
         f"openai {round(imp['cases']['openai']['import_ms']):,} ms", f"{ratios['import_vs_openai']:.2f}×",
         f"≤ {targets['import_vs_openai']:g}×", _verdict(pair("import_vs_openai"))],
        ["Batch CPU per request, 64 in flight", _us(batch["cpu_us"]["holysheep batch, default (aiohttp) backend"]),
         f"openai + aiohttp {_us(batch['cpu_us']['openai.AsyncOpenAI + DefaultAioHttpClient'])}",
         f"{batch['cpu_vs_openai_aiohttp']:.2f}×", f"≤ {targets['batch_cpu_vs_openai_aiohttp']:g}×",
         _verdict((batch["cpu_vs_openai_aiohttp"], targets["batch_cpu_vs_openai_aiohttp"]))],
    ]
    for key, (label, name) in BATCH_WALLS.items():
        wall = batch[key]
        ideal = f"ideal {wall['ideal_s']:.3f} s"
        versus = ideal if wall["vs"] == "ideal" else f"{wall['vs']}; {ideal}"
        rows.append([label, f"{wall['wall_s']:.3f} s", versus,
                     f"{ratios[name]:.2f}×" + (" ideal" if wall["vs"] == "ideal" else ""),
                     f"≤ {targets[name]:g}×", _verdict(pair(name))])
    return "\n".join([
        f"`python benchmarks/run.py`, {r['date']} ({r['machine']}):", "",
        "| Benchmark | holysheep | Peer(s), same run | Ratio | Target | |", "|" + "---|" * 6,
        *("| " + " | ".join(row) + " |" for row in rows)])

"""Batch CPU per request with the OpenTelemetry instrumentation on, against off (target: at most 1.15x).

    python benchmarks/otel_overhead.py [-n 2000] [--rounds 5] [--concurrency 64] [--no-write]

Four sides, each ``AsyncClient().chat.completions.batch`` over ``n`` prompts against the canned local server
(a subprocess pinned to the other core), timed with ``time.process_time`` (this process only):

- ``off``: nothing registered;
- ``traces``: ``HolySheepInstrumentor().instrument(tracer_provider=TracerProvider())``, the OpenTelemetry SDK's
  tracer provider with no span processor, so no exporter (every span is still built, filled and ended); the
  meter provider is the global one, which is the API's no-op until an application sets one;
- ``traces_metrics``: the same plus an SDK ``MeterProvider`` with an in-memory reader (every measurement is
  aggregated as an exporter would need it);
- ``bare_sdk_spans``: a hook that only starts and ends one SDK span per call, no attributes and no metrics:
  the floor of any span-per-call instrumentation on this machine.

The sides run interleaved (off, traces, traces_metrics, bare_sdk_spans, off, ...); each ratio is the median of
the rounds' ratios to the ``off`` run of the same round, so a slow stretch of a shared machine lands on every
side.
Writes ``otel_overhead`` into ``benchmarks/results.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from _common import HERE, KEY, MODEL, canned_server, pin_client

TARGET = 1.15


def _batch_cpu_us(url: str, prompts: list[Any], concurrency: int) -> float:
    import holysheep

    async def main() -> float:
        async with holysheep.AsyncClient(api_key=KEY, base_url=url) as client:
            start = time.process_time()
            res = await client.chat.completions.batch(prompts, model=MODEL, concurrency=concurrency, max_tokens=16,
                                                      check_quota=False)
            spent = time.process_time() - start
            assert len(res.responses) == len(prompts)
            return spent / len(prompts) * 1e6

    return asyncio.run(main())


class _BareSpans:
    """The floor of any span-per-call instrumentation: a bare SDK span (no attributes) started with the call's
    first attempt and ended with its outcome, through the same hooks."""

    def __init__(self, tracer_provider: Any) -> None:
        self._tracer = tracer_provider.get_tracer("floor")

    def on_request(self, event: Any) -> None:
        if event.attempt == 1:
            event.ctx.state[self] = self._tracer.start_span("chat")

    def on_response(self, event: Any) -> None:
        if event.outcome in ("success", "error"):
            event.ctx.state.pop(self).end()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="batch items per run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--no-write", action="store_true", help="print only; leave results.json alone")
    args = parser.parse_args()

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    from holysheep._core.hooks import register_global_hooks, unregister_global_hooks
    from holysheep.integrations.otel import HolySheepInstrumentor

    pin_client()
    reader = InMemoryMetricReader()
    tracer_provider, meter_provider = TracerProvider(), MeterProvider(metric_readers=[reader])
    sides: dict[str, dict[str, Any] | None] = {
        "off": None,
        "traces": {"tracer_provider": tracer_provider},
        "traces_metrics": {"tracer_provider": tracer_provider, "meter_provider": meter_provider},
    }
    instrumentor = HolySheepInstrumentor()
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(args.n)]
    runs: dict[str, list[float]] = {name: [] for name in (*sides, "bare_sdk_spans")}
    floor = _BareSpans(tracer_provider)

    def run(kwargs: dict[str, Any] | None, items: list[Any]) -> float:
        if kwargs is None:
            return _batch_cpu_us(url, items, args.concurrency)
        instrumentor.instrument(**kwargs)
        try:
            return _batch_cpu_us(url, items, args.concurrency)
        finally:
            instrumentor.uninstrument()

    with canned_server(0.0, 16) as url:
        for kwargs in sides.values():  # warm-up: imports, connections, caches
            run(kwargs, prompts[:200])
        for _ in range(args.rounds):
            for name, kwargs in sides.items():
                runs[name].append(run(kwargs, prompts))
            reader.get_metrics_data()  # the reader's collection is not part of a request's cost
            register_global_hooks(floor)
            try:
                runs["bare_sdk_spans"].append(_batch_cpu_us(url, prompts, args.concurrency))
            finally:
                unregister_global_hooks(floor)
            print("  ".join(f"{name} {runs[name][-1]:7.1f} µs/item" for name in runs), flush=True)
    ratios = {name: [b / a for a, b in zip(runs["off"], runs[name], strict=True)] for name in sides if name != "off"}
    ratios["bare_sdk_spans"] = [b / a for a, b in zip(runs["off"], runs["bare_sdk_spans"], strict=True)]
    ratio = {name: statistics.median(r) for name, r in ratios.items()}
    ratios_floor = ratios["bare_sdk_spans"]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "n": args.n, "concurrency": args.concurrency, "rounds": args.rounds,
        "us_per_item": {name: round(statistics.median(v), 1) for name, v in runs.items()},
        "ratio": round(ratio["traces"], 3),
        "ratio_with_sdk_metrics": round(ratio["traces_metrics"], 3),
        "ratios": {name: [round(x, 3) for x in r] for name, r in ratios.items()},
        "ratio_bare_sdk_spans": round(statistics.median(ratios_floor), 3),
        "floor_note": "bare_sdk_spans: a hook that only starts and ends one SDK span per call (no attributes, no "
                      "metrics), in the same rounds: the floor of any span-per-call instrumentation here",
        "vs": "the same batch with nothing registered; ratio: SDK TracerProvider without exporter (global no-op "
              "meter provider); ratio_with_sdk_metrics: plus an SDK MeterProvider with an in-memory reader; "
              "medians of interleaved rounds",
        "target": TARGET, "meets_target": ratio["traces"] <= TARGET,
    }
    print(json.dumps(result, indent=2))
    if not args.no_write:
        path = Path(HERE / "results.json")
        data = json.loads(path.read_text())
        data["otel_overhead"] = result
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote otel_overhead into {path}")


if __name__ == "__main__":
    main()

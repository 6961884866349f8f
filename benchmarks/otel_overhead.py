"""Tracing cost: holysheep + its instrumentor against openai + the official instrumentation (target: at most
0.5x), and batch CPU per request with the instrumentation on, against off.

    python benchmarks/otel_overhead.py --peer [-n 2000] [--rounds 5]       # CPU time, interleaved rounds
    python benchmarks/otel_overhead.py --peer --instructions [--items 900]  # valgrind instruction counts
    python benchmarks/otel_overhead.py --peer --stream ...                  # the same with stream=True
    python benchmarks/otel_overhead.py [-n 2000] [--rounds 5] [--concurrency 64] [--no-write]
    python benchmarks/otel_overhead.py --instructions [--items 900]

``--peer`` runs four sides, each in a child interpreter: ``openai_off`` / ``openai_traced`` (``AsyncOpenAI``,
``opentelemetry-instrumentation-openai-v2``) and ``holysheep_off`` / ``holysheep_traced`` (``AsyncClient``,
``HolySheepInstrumentor``), each doing ``chat.completions.create`` at concurrency 64 against the canned server,
both traced sides on an SDK ``TracerProvider`` without exporter. The figure is holysheep traced over openai
traced (CPU per request: the median of the interleaved rounds' ratios; or instructions per request), written as
``otel_overhead.peer``.

The self-relative sides below (the first figure this file had; its 1.15x target is replaced by the peer's):

Six sides, each ``AsyncClient().chat.completions.batch`` over ``n`` prompts against the canned local server
(a subprocess pinned to the other core), timed with ``time.process_time`` (this process only):

- ``off``: nothing registered;
- ``traces``: ``HolySheepInstrumentor().instrument(tracer_provider=TracerProvider())``, the OpenTelemetry SDK's
  tracer provider with no span processor, so no exporter (every span is still built, filled and ended); the
  meter provider is the global one, which is the API's no-op until an application sets one;
- ``traces_metrics``: the same plus an SDK ``MeterProvider`` with an in-memory reader (every measurement is
  aggregated as an exporter would need it);
- ``bare_sdk_spans``: a hook that only starts and ends one SDK span per call, no attributes and no metrics:
  the floor of any span-per-call instrumentation on this machine;
- ``traces_noop_tracer``: the instrumentation on the API's ``NoOpTracerProvider``: every hook, attribute and
  metric call holysheep makes, with no SDK span. ``traces`` minus this side is what the SDK itself spends on
  the spans holysheep hands it (``sdk_span_share``);
- ``traces_unsampled`` (``--instructions`` only): an SDK ``TracerProvider`` whose sampler drops every trace:
  what each batch a ``TraceIdRatioBased`` sampler leaves out costs (its items follow the batch's decision).

The sides run interleaved (off, traces, traces_metrics, bare_sdk_spans, off, ...); each ratio is the median of
the rounds' ratios to the ``off`` run of the same round, so a slow stretch of a shared machine lands on every
side.
Writes ``otel_overhead`` into ``benchmarks/results.json``.

``--instructions`` counts instructions instead, with ``valgrind --tool=cachegrind``: each side runs in a child
interpreter, once with ``items / 3`` and once with ``items`` batch items after the same warm-up, and the
marginal count per item, (count at ``items`` - count at ``items / 3``) / (2/3 ``items``), leaves out start-up.
Instruction counts do not move with the load of a shared machine, as CPU time does; they are written as
``otel_overhead.instructions``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _common import HERE, KEY, MODEL, canned_server, pin_client

TARGET = 1.15  # the self-relative figure's former target, kept in its results for comparison


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


SIDES = ("off", "traces", "traces_metrics", "bare_sdk_spans", "traces_noop_tracer", "traces_unsampled")


def _child(side: str, n: int, url: str, concurrency: int) -> None:
    """One side's batch of ``n`` items after a 200-item warm-up (run under valgrind by ``_instructions``)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    from holysheep._core.hooks import register_global_hooks
    from holysheep.integrations.otel import HolySheepInstrumentor

    tracer_provider = TracerProvider()
    if side == "traces":
        HolySheepInstrumentor().instrument(tracer_provider=tracer_provider)
    elif side == "traces_metrics":
        HolySheepInstrumentor().instrument(tracer_provider=tracer_provider,
                                           meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
    elif side == "bare_sdk_spans":
        register_global_hooks(_BareSpans(tracer_provider))
    elif side == "traces_unsampled":  # a batch the sampler drops: what a sampled-out share of batches costs
        from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

        HolySheepInstrumentor().instrument(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
    elif side == "traces_noop_tracer":
        from opentelemetry.trace import NoOpTracerProvider

        HolySheepInstrumentor().instrument(tracer_provider=NoOpTracerProvider())
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(max(n, 200))]
    _batch_cpu_us(url, prompts[:200], concurrency)
    if n:
        _batch_cpu_us(url, prompts[:n], concurrency)


def _instructions(items: int, concurrency: int, write: bool, words: int, sides: tuple[str, ...]) -> None:
    from _common import valgrind_instructions

    small = items // 3
    per: dict[str, float] = {}
    with canned_server(0.0, words) as url:
        for side in sides:
            counts = [valgrind_instructions([sys.executable, __file__, "--child", side, str(n), url,
                                             "--concurrency", str(concurrency)]) for n in (small, items)]
            per[side] = (counts[1] - counts[0]) / (items - small)
            print(f"{side:<16} {per[side] / 1000:8.1f} k instructions/item", flush=True)
    result = {
        "machine": f"{platform.machine()}, Python {platform.python_version()}", "date": time.strftime("%Y-%m-%d"),
        "items": items, "concurrency": concurrency, "reply_words": words,
        "k_instructions_per_item": {side: round(v / 1000, 1) for side, v in per.items()},
        "ratio": {side: round(per[side] / per["off"], 3) for side in sides if side != "off"},
        **({"sdk_span_share": round(1 + (per["traces"] - per["traces_noop_tracer"]) / per["off"], 3)}
           if "traces" in per and "traces_noop_tracer" in per else {}),
        "how": "valgrind cachegrind, marginal count per item between items/3 and items (start-up left out)",
    }
    print(json.dumps(result, indent=2))
    if write:
        path = Path(HERE / "results.json")
        data = json.loads(path.read_text())
        data.setdefault("otel_overhead", {}).setdefault("instructions", {})[f"reply_words_{words}"] = result
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote otel_overhead.instructions into {path}")


# ------------------------------------------------------------------ against the peer: openai + official instrumentation
PEER_SIDES = ("openai_off", "openai_traced", "holysheep_off", "holysheep_traced")
PEER_TARGET = 0.5


def _peer_child(side: str, n: int, url: str, concurrency: int, stream: bool = False) -> None:
    """One peer side: ``n`` creates (after 200 for warm-up) at ``concurrency``, each library's async client with its
    defaults but no retries and 600 s timeouts (valgrind is slow to connect); ``*_traced`` with its instrumentation
    on an SDK ``TracerProvider`` without exporter (global no-op meter provider). Prints the CPU µs per request."""
    from _common import MESSAGES, inflight
    from opentelemetry.sdk.trace import TracerProvider

    library, mode = side.split("_")
    if mode == "traced":
        if library == "openai":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=TracerProvider())  # type: ignore[no-untyped-call]
        else:
            from holysheep.integrations.otel import HolySheepInstrumentor

            HolySheepInstrumentor().instrument(tracer_provider=TracerProvider())

    async def main() -> float:
        if library == "openai":
            import openai

            client: Any = openai.AsyncOpenAI(api_key=KEY, base_url=url, max_retries=0, timeout=600.0)
        else:
            import holysheep

            client = holysheep.AsyncClient(api_key=KEY, base_url=url, max_retries=0, timeout=600.0)

        async def one() -> None:
            if not stream:
                await client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=16)
                return
            async for _ in await client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=16,
                                                                stream=True):
                pass

        await inflight(one, 200, concurrency)
        start = time.process_time()
        if n:
            await inflight(one, n, concurrency)
        spent = time.process_time() - start
        await client.close() if library == "openai" else await client.aclose()
        return spent / max(n, 1) * 1e6

    print(json.dumps({"us_per_request": asyncio.run(main())}))


def _peer(items: int, rounds: int, concurrency: int, instructions: bool, write: bool, words: int,
          stream: bool = False) -> None:
    """holysheep + its instrumentor against openai + the official openai-v2 instrumentation, in the same run."""
    import subprocess

    def child(side: str, n: int) -> list[str]:
        return [sys.executable, __file__, "--peer-child", side, str(n), url, "--concurrency", str(concurrency),
                *(["--stream"] if stream else [])]

    per: dict[str, float] = {}
    runs: dict[str, list[float]] = {side: [] for side in PEER_SIDES}
    with canned_server(0.0, words) as url:
        if instructions:
            from _common import valgrind_instructions

            small = items // 3
            for side in PEER_SIDES:
                counts = [valgrind_instructions(child(side, n)) for n in (small, items)]
                per[side] = (counts[1] - counts[0]) / (items - small) / 1000
                print(f"{side:<18} {per[side]:8.1f} k instructions/request", flush=True)
        else:
            for _ in range(rounds):  # interleaved: a slow stretch of a shared machine lands on every side
                for side in PEER_SIDES:
                    out = subprocess.run(child(side, items), capture_output=True, text=True, check=True).stdout
                    runs[side].append(json.loads(out.splitlines()[-1])["us_per_request"])
                print("  ".join(f"{side} {runs[side][-1]:7.1f} µs" for side in PEER_SIDES), flush=True)
            per = {side: statistics.median(v) for side, v in runs.items()}
    if instructions:
        ratio = per["holysheep_traced"] / per["openai_traced"]
        ratio_off = per["holysheep_off"] / per["openai_off"]
    else:  # medians of the rounds' ratios
        ratio = statistics.median(h / o for h, o in zip(runs["holysheep_traced"], runs["openai_traced"], strict=True))
        ratio_off = statistics.median(h / o for h, o in zip(runs["holysheep_off"], runs["openai_off"], strict=True))
    increment = (per["holysheep_traced"] - per["holysheep_off"]) / (per["openai_traced"] - per["openai_off"])
    unit = "k_instructions_per_request" if instructions else "us_per_request"
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"), "requests": items, "concurrency": concurrency, "reply_words": words,
        "call": "create(stream=True), read to the end (22 events)" if stream else "create",
        unit: {side: round(v, 1) for side, v in per.items()},
        "ratio": round(ratio, 3), "ratio_untraced": round(ratio_off, 3), "tracing_increment_ratio": round(increment, 3),
        "target": PEER_TARGET, "meets_target": ratio <= PEER_TARGET,
        "how": ("valgrind cachegrind, marginal count per request between requests/3 and requests" if instructions
                else f"process CPU time per request, medians of {rounds} interleaved rounds"),
        "vs": "ratio: holysheep AsyncClient + HolySheepInstrumentor over openai AsyncOpenAI + "
              "opentelemetry-instrumentation-openai-v2, both on an SDK TracerProvider without exporter, each "
              "library's default transport, chat.completions.create at the given concurrency; ratio_untraced: the "
              "same without instrumentation; tracing_increment_ratio: what tracing adds to holysheep over what "
              "it adds to openai",
    }
    print(json.dumps(result, indent=2))
    if write:
        path = Path(HERE / "results.json")
        data = json.loads(path.read_text())
        key = f"{'instructions' if instructions else 'cpu'}_concurrency_{concurrency}{'_stream' if stream else ''}"
        data.setdefault("otel_overhead", {}).setdefault("peer", {})[key] = result
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote otel_overhead.peer.{key} into {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="batch items per run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--no-write", action="store_true", help="print only; leave results.json alone")
    parser.add_argument("--instructions", action="store_true", help="count instructions with valgrind instead")
    parser.add_argument("--items", type=int, default=900, help="batch items per counted run (--instructions)")
    parser.add_argument("--reply-words", type=int, default=16,
                        help="words per canned reply (16: the least CPU a batch item costs, so the largest ratio)")
    parser.add_argument("--only", nargs="*", choices=SIDES, default=None, help="sides to count (--instructions)")
    parser.add_argument("--peer", action="store_true",
                        help="holysheep + its instrumentor against openai + the official instrumentation (target "
                             f"<= {PEER_TARGET}x); with --instructions, counted by valgrind")
    parser.add_argument("--stream", action="store_true", help="--peer: stream=True creates, read to the end")
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "N", "URL"), help=argparse.SUPPRESS)
    parser.add_argument("--peer-child", nargs=3, metavar=("SIDE", "N", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2], args.concurrency)
        return
    if args.peer_child:
        _peer_child(args.peer_child[0], int(args.peer_child[1]), args.peer_child[2], args.concurrency, args.stream)
        return
    if args.peer:
        _peer(args.items if args.instructions else args.n, args.rounds, args.concurrency, args.instructions,
              not args.no_write, args.reply_words, args.stream)
        return
    if args.instructions:
        counted: tuple[str, ...] = tuple(args.only) if args.only else SIDES
        if "off" not in counted:
            counted = ("off", *counted)
        _instructions(args.items, args.concurrency, not args.no_write, args.reply_words, counted)
        return

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import NoOpTracerProvider

    from holysheep._core.hooks import register_global_hooks, unregister_global_hooks
    from holysheep.integrations.otel import HolySheepInstrumentor

    pin_client()
    reader = InMemoryMetricReader()
    tracer_provider, meter_provider = TracerProvider(), MeterProvider(metric_readers=[reader])
    sides: dict[str, dict[str, Any] | None] = {
        "off": None,
        "traces": {"tracer_provider": tracer_provider},
        "traces_metrics": {"tracer_provider": tracer_provider, "meter_provider": meter_provider},
        "traces_noop_tracer": {"tracer_provider": NoOpTracerProvider()},
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

    with canned_server(0.0, args.reply_words) as url:
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
        "n": args.n, "concurrency": args.concurrency, "rounds": args.rounds, "reply_words": args.reply_words,
        "us_per_item": {name: round(statistics.median(v), 1) for name, v in runs.items()},
        "ratio": round(ratio["traces"], 3),
        "ratio_with_sdk_metrics": round(ratio["traces_metrics"], 3),
        "ratios": {name: [round(x, 3) for x in r] for name, r in ratios.items()},
        "ratio_bare_sdk_spans": round(statistics.median(ratios_floor), 3),
        "ratio_holysheep_share": round(ratio["traces_noop_tracer"], 3),
        "ratio_sdk_span_share": round(1 + ratio["traces"] - ratio["traces_noop_tracer"], 3),
        "share_note": "holysheep_share: the same instrumentation on the API's no-op tracer (every hook, attribute "
                      "and metric call of holysheep's, no SDK span); sdk_span_share: 1 + (traces - that), the "
                      "SDK's own cost of building and ending the spans holysheep hands it",
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
        kept = data.get("otel_overhead", {}).get("instructions")
        data["otel_overhead"] = {**result, **({"instructions": kept} if kept else {})}
        path.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote otel_overhead into {path}")


if __name__ == "__main__":
    main()

"""The registry of generated blocks: name -> a function of the data that returns the block's Markdown.

Each function reads the packaged data through the library's public API (or `benchmarks/results.json`), so a
new row or a changed default changes the block; none keeps a copy of a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bench_blocks import fake_server_table, http2_table, otel_cost, otel_peer, performance_results
from .module_blocks import request_path_modules

ROOT = Path(__file__).resolve().parents[2]

GPU_TABLE_HEAD = 14  # lines of `holysheep gpus` the excerpt shows before "...": the header and 12 rows
GPU_TABLE_TAIL = 2  # the legend lines under the table


def gpu_count() -> str:
    """How many rows the accelerator table has (`len(holysheep.hardware.gpus())`)."""
    from holysheep.hardware import gpus

    return str(len(gpus()))


def catalog_count() -> str:
    """How many models the estimator's catalog has (`holysheep models --catalog`)."""
    from holysheep.estimator._catalog import list_models

    return str(len(list_models()))


def gpu_table() -> str:
    """An excerpt of `holysheep gpus` (sorted by BF16): its first rows, the row count and its legend."""
    from holysheep.hardware import gpus
    from holysheep.hardware._cli import render_gpus_table

    lines = render_gpus_table("bf16").splitlines()
    cut = [*lines[:GPU_TABLE_HEAD], f"...  (one line per row, {len(gpus())} in all)", *lines[-GPU_TABLE_TAIL:]]
    return "\n".join(["```text", *cut, "```"])


def _usd(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}" if round(x, 2) == x else f"{x:g}"


def api_prices() -> str:
    """The packaged API price catalog (`holysheep.pricing.prices()`), one row per model, in catalog order."""
    from holysheep.pricing import prices

    rows = ["| model | input | cached input | output | blended (kind) | as of | source |", "|" + "---|" * 7]
    for p in prices():
        blended = "-" if p.blended_per_m is None else f"{_usd(p.blended_per_m)} ({p.blended_kind})"
        source = p.source.split("://", 1)[-1].rstrip("/")
        rows.append(f"| {p.model} | {_usd(p.input_per_m)} | {_usd(p.cached_input_per_m)} | {_usd(p.output_per_m)} | "
                    f"{blended} | {p.as_of} | {source} |")
    return "\n".join(rows)


def _fence(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```"


def _awq_70b_plan() -> str:
    import warnings

    from holysheep.hardware._cli import run_plan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the planner's caveats, which `holysheep plan` prints apart
        return run_plan("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, objective="cost_per_token")[0]


def plan_70b_awq() -> str:
    """What `holysheep plan llama-3.1-70b --quant int4-awq --context 8192 --batch 4 --objective cost_per_token`
    prints, from its options table on."""
    lines = _awq_70b_plan().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Options (objective"))
    return _fence("\n".join(lines[start:]))


def break_even_70b() -> str:
    """`break_even` of that plan's top option against deepseek-v3.2 at 10M tokens/day: its arithmetic."""
    import warnings

    from holysheep.hardware import pick_hardware
    from holysheep.pricing import break_even

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        top = pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, max_gpus=8,
                            objective="cost_per_token")[0]
    return _fence(break_even(api_model="deepseek-v3.2", option=top, tokens_per_day=10_000_000).arithmetic)


# The link text of each publication the speed validation rows cite, by the start of its URL; a source not
# listed shows its URL's host and path.
SOURCE_LABELS = {
    "https://github.com/pytorch-labs/gpt-fast": "gpt-fast",
    "https://github.com/ggml-org/llama.cpp/pull/4766": "llama.cpp PR #4766",
    "https://github.com/ggml-org/llama.cpp/pull/6017": "llama.cpp PR #6017",
    "https://github.com/ggml-org/llama.cpp/discussions/4167": "llama.cpp #4167",
    "https://github.com/dmatora/LLM-inference-speed-benchmarks/issues/10": "dmatora #10",
    "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on": "vLLM sweep",
    "https://github.com/QwenLM/Qwen2.5/blob/010c37c": "Qwen2.5 speed table",
    "https://github.com/QwenLM/Qwen2.5/blob/5c4e69c": "Qwen2 speed table",
    "https://github.com/QwenLM/Qwen3/": "Qwen3 speed table",
    "https://github.com/sgl-project/sglang/pull/2643": "SGLang PR #2643",
    "https://github.com/dstackai/benchmarks/": "dstack DeepSeek-R1 benchmark",
    "https://github.com/mlc-ai/llm-perf-bench/": "MLC llm-perf-bench",
    "https://calebcoffie.com/benchmarks/": "calebcoffie.com benchmarks",
}


def _source_label(url: str) -> str:
    for start, label in SOURCE_LABELS.items():
        if url.startswith(start):
            return label
    return url.split("://", 1)[-1].split("#")[0].rstrip("/")


def speed_validation_rows() -> str:
    """Every published decode row of `hardware/data/decode_benchmarks.json` against the speed model's figure
    (`_modelled` of tests/hardware/test_speed_validation.py, the scoring the tests use)."""
    import warnings

    from tests.hardware.test_speed_validation import ROWS, _modelled

    head = "model, quant | GPUs | runtime | batch | context | published tok/s | model (error) | role | source, as of"
    lines = [f"| {head} |", "|" + "---|" * 9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in ROWS:
            got = _modelled(r)
            published = r["tokens_per_s"]
            shown = f"{published:,.0f}" if published == int(published) else f"{published:,}"
            error = f"{got:.1f} ({(got / published - 1) * 100:+.0f}%)"
            role = r["role"] if r.get("validates", True) else f"{r['role']}, validates nothing"
            lines.append(f"| {r['model']} {r['quant']} | {r['count']}x {r['gpu']} | {r['runtime']} | {r['batch']:,} | "
                         f"{r['context']:,} | {shown} | {error} | {role} | "
                         f"[{_source_label(r['source'])}]({r['source']}) {r['as_of']} |")
    return "\n".join(lines)


def speed_crossval() -> str:
    """The speed model's leave-one-source-out score per publication (tests/hardware/crossval.py, about 1 s)."""
    import warnings

    from tests.hardware.test_speed_crossval import table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return "\n".join(table())


def memory_validation() -> str:
    """The estimator's figure next to each published memory measurement (tests/estimator/memory_rows.py)."""
    from tests.estimator.memory_rows import table

    return "\n".join(table())


def speed_intervals() -> str:
    """The decode ranges per group (hardware/data/speed_intervals.json) and their held-out coverage
    (tests/hardware/intervals.py)."""
    import math
    import warnings

    from tests.hardware.intervals import held_out_coverage

    from holysheep.hardware._intervals import _table

    lines = ["| group (runtime/memory/batch) | rows | publications | 80 % range, published / modelled |",
             "|---|---|---|---|"]
    for key, q in _table().items():
        label = "pooled (fallback, 90 %)" if key == "pooled" else key
        lines.append(f"| {label} | {q['rows']} | {q['sources']} | "
                     f"{math.exp(-q['high']):.2f}–{math.exp(-q['low']):.2f} |")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cov = held_out_coverage()
    low = min(((g, v) for g, v in cov.per_source.items() if v[0] >= 5), key=lambda kv: kv[1][1])
    lines += ["", f"Held out: the ranges cover **{cov.covered * 100:.1f} %** of {cov.rows} rows (target 75-85 %), "
              f"median width high/low **{cov.median_width:.2f}x** (target at most 2x); {cov.pooled_rows} rows "
              f"took the pooled range; lowest publication of 5 rows or more: {low[0]} "
              f"({low[1][1] * 100:.0f} % of {low[1][0]} rows)."]
    return "\n".join(lines)


def _client_default(name: str) -> Any:
    """A client option's default: `Client`'s own, else `make_config`'s (which documents them as the clients')."""
    import inspect

    from holysheep import Client
    from holysheep._core.config import make_config

    for fn in (Client, make_config):
        param = inspect.signature(fn).parameters.get(name)
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
    raise KeyError(f"no default for the client option {name!r}")


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n:,} bytes"


def _seconds(s: float) -> str:
    return f"{s:g} s"


CLIENT_DEFAULTS: dict[str, Callable[[Any], str]] = {
    "max_retries": str, "initial_retry_delay": _seconds, "max_retry_delay": _seconds, "max_retry_after": _seconds,
    "max_response_bytes": _size, "max_sse_event_bytes": _size, "max_stream_text_bytes": _size,
    "stream_idle_timeout": _seconds, "tool_threads": str,
}


def _default_block(name: str) -> Callable[[], str]:
    def block() -> str:
        return CLIENT_DEFAULTS[name](_client_default(name))

    block.__doc__ = f"The client's default `{name}`."
    return block


def _retried_4xx() -> list[int]:
    from holysheep._core.retry import status_is_retryable

    return [s for s in range(400, 500) if status_is_retryable(s, {})]


def retried_4xx() -> str:
    """The 4xx statuses the retry policy retries, with their reason phrases (`_core/retry.py`)."""
    from http import HTTPStatus

    return ", ".join(f"{s} {HTTPStatus(s).phrase}" for s in _retried_4xx())


def retried_4xx_codes() -> str:
    """The same, as bare codes."""
    return ", ".join(map(str, _retried_4xx()))


def never_retried() -> str:
    """The statuses never retried nor failed over (`NEVER_RETRY_STATUSES`)."""
    from holysheep._core.retry import NEVER_RETRY_STATUSES

    return ", ".join(map(str, sorted(NEVER_RETRY_STATUSES)))


BLOCKS: dict[str, Callable[[], str]] = {
    "gpu-count": gpu_count,
    "catalog-count": catalog_count,
    "gpu-table": gpu_table,
    "api-prices": api_prices,
    "plan-70b-awq": plan_70b_awq,
    "break-even-70b": break_even_70b,
    "speed-validation-rows": speed_validation_rows,
    "speed-crossval": speed_crossval,
    "memory-validation": memory_validation,
    "speed-intervals": speed_intervals,
    "performance-results": performance_results,
    "otel-peer": otel_peer,
    "otel-cost": otel_cost,
    "http2-table": http2_table,
    "fake-server-table": fake_server_table,
    "retried-4xx": retried_4xx,
    "retried-4xx-codes": retried_4xx_codes,
    "never-retried": never_retried,
    "request-path-modules": request_path_modules,
    **{f"default-{name.replace('_', '-')}": _default_block(name) for name in CLIENT_DEFAULTS},
}

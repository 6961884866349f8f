"""The registry of generated blocks: name -> a function of the data that returns the block's Markdown.

Each function reads the packaged data through the library's public API (or `benchmarks/results.json`), so a
new row or a changed default changes the block; none keeps a copy of a figure.
"""

from __future__ import annotations

from collections.abc import Callable

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


BLOCKS: dict[str, Callable[[], str]] = {
    "gpu-count": gpu_count,
    "catalog-count": catalog_count,
    "gpu-table": gpu_table,
    "api-prices": api_prices,
    "plan-70b-awq": plan_70b_awq,
    "break-even-70b": break_even_70b,
}

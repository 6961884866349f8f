"""The figures and outputs docs/estimator.md and docs/hardware.md quote are the ones the code prints with the
defaults: each assertion computes the number with the real estimator, picker or CLI renderer and looks for it,
formatted as the page writes it, in the page (whitespace-normalised). A code change that moves a quoted figure
fails here until the page is updated."""

from __future__ import annotations

import re
import warnings
from functools import cache
from typing import TYPE_CHECKING

import pytest

from ._util import ROOT

if TYPE_CHECKING:
    from holysheep.hardware import PickResult


@cache
def _page(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def _block(name: str, after: str) -> list[str]:
    """The lines of the first ```text block after ``after`` in docs/``name``."""
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    start = text.index("```text\n", text.index(after)) + len("```text\n")
    return text[start:text.index("```", start)].rstrip("\n").splitlines()


def _in(name: str, *phrases: str) -> None:
    page = _page(name)
    for phrase in phrases:
        assert " ".join(phrase.split()) in page, f"docs/{name} does not say: {phrase!r}"


def _gb(x: float, nd: int = 1) -> str:
    return f"{x:,.{nd}f}"


# --- docs/estimator.md -----------------------------------------------------------------------------------


def test_estimator_as_shipped_formats() -> None:
    from holysheep.estimator import estimate_inference_memory as inf

    small, big, ds = inf("gpt-oss-20b"), inf("gpt-oss-120b"), inf("deepseek-v3")
    small_bf16, ds_bf16 = inf("gpt-oss-20b", quant="bf16"), inf("deepseek-v3", quant="bf16")
    _in("estimator.md",
        f"plans {ds.breakdown['weights']:,.0f} GB of fp8 weights (8x H200 fits; bf16 would be "
        f"{ds_bf16.breakdown['weights']:,.0f} GB), gpt-oss-120b needs {big.total_gb:.0f} GB (one H100) and "
        f"gpt-oss-20b {small.total_gb:.1f} GB ({small.breakdown['weights'] * 1e9 / 2**30:.1f} GiB of weights) "
        f"instead of {small_bf16.total_gb:.1f} GB in bf16.")
    assert ds.fits("H200", 8) and big.fits("H100") and not ds_bf16.fits("H200", 8)


def test_estimator_runtime_paragraph() -> None:
    from holysheep.estimator import estimate_inference_memory as inf

    default = inf("llama-3.1-70b", quant="int4-awq", context=8192)
    vllm = inf("llama-3.1-70b", quant="int4-awq", context=8192, runtime="vllm")
    check = vllm.memory_check("L40S", 1)
    cpp = inf("llama-3.1-70b", "q4_k_m", 8192, runtime="llama.cpp").with_tensor_parallel(2)
    _in("estimator.md",
        f"Llama-3.1-70B AWQ at 8k, batch 1 needs {default.total_gb:.1f} GB on the default runtime and fits one L40S",
        f"under vLLM it needs {check.need_gb:.1f} GB of the {check.limit_gb:.1f} GB",
        f"Llama-3.1-70B Q4_K_M at 8k on llama.cpp needs {cpp.per_gpu_gb:.1f} GB on each of 2 × RTX 4090")
    assert default.fits("L40S") and not check.fits
    at_091 = inf("llama-3.1-70b", quant="int4-awq", context=8192, runtime="vllm", gpu_memory_utilization=0.91)
    assert at_091.fits("L40S")


def test_estimator_solver_example_is_what_plan_prints() -> None:
    from holysheep.estimator import max_batch, max_context
    from holysheep.hardware._cli import run_plan

    ctx, seqs = max_context("llama-3.1-8b", "L4"), max_batch("llama-3.1-8b", "L4", 8192)
    line = (f"at most {ctx:,} tokens of context on this GPU at batch 1; at most {seqs} sequences of 8,192 tokens")
    text, _ = run_plan("llama-3.1-8b", gpus=["L4"], context=8192)
    assert line in text
    _in("estimator.md", f'"{line}" for Llama-3.1-8B BF16 on an L4')


def test_estimator_qlora_paragraph() -> None:
    from holysheep.estimator import estimate_training_memory as tr

    at2k = tr("llama-3.1-70b", method="qlora", seq_len=2048)
    at1k = tr("llama-3.1-70b", method="qlora", seq_len=1024)
    bare = tr("llama-3.1-70b", method="qlora", seq_len=2048, gradient_checkpointing="none")
    b = at2k.breakdown
    _in("estimator.md",
        f"at 2,048 tokens × 1 needs {at2k.per_gpu_gb:.1f} GB ({b['weights']:.1f} nf4 base + adapters, "
        f"{b['gradients']:.1f} grads, {b['activations']:.1f} activations, {b['overhead']:.1f} CUDA context)",
        f"at 1,024 tokens ({at1k.per_gpu_gb:.1f} GB) it does",
        f"Without checkpointing it needs {bare.per_gpu_gb:.1f} GB")
    assert not at2k.fits("L40S") and at1k.fits("L40S")


def test_estimator_blog_comparison_table() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.estimator import estimate_training_memory as tr

    fp16 = inf("llama-2-7b", quant="fp16", context=2048)
    int8 = inf("llama-2-7b", quant="int8", context=2048)
    b70 = inf("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    l2 = inf("llama-2-70b", quant="int4-awq", context=8192, batch=4)
    kv8 = inf("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, kv_dtype="fp8")
    f, e, w = fp16.breakdown, int8.breakdown, b70.breakdown
    seven, seventy = tr("llama-2-7b", seq_len=2048), tr("llama-3.1-70b", seq_len=2048)
    z3 = tr("llama-3.1-70b", seq_len=2048, zero_stage=3, num_gpus=8)
    z3_paper = tr("llama-3.1-70b", seq_len=2048, zero_stage=3, num_gpus=8, accounting="zero-paper")
    states = sum(v for k, v in seven.breakdown.items() if k not in ("activations", "overhead"))
    eager = tr("llama-2-7b", seq_len=2048, flash_attention=False).breakdown["activations"]
    full = tr("llama-2-7b", seq_len=2048, gradient_checkpointing="full").breakdown["activations"]
    _in("estimator.md",
        f"**{fp16.total_gb:.2f} GB**: {f['weights']:.2f} weights + {f['kv_cache']:.2f} KV + "
        f"{f['activations']:.2f} prefill + {f['overhead']:.2f} runtime",
        f"**{int8.total_gb:.2f} GB**: {e['weights']:.2f} weights (embeddings and lm_head stay fp16) + "
        f"{e['kv_cache']:.2f} KV",
        f"**{b70.total_gb:.1f} GB** (Llama-3.1-70B: {w['weights']:.1f} weights + {w['kv_cache']:.1f} KV + "
        f"{w['activations']:.1f} + {w['overhead']:.1f}); {l2.total_gb:.1f} GB for Llama-2-70B; "
        f"{kv8.total_gb:.1f} GB with fp8 KV",
        f"**{seven.per_gpu_gb:.0f} GB** at s = 2048 with FlashAttention ({states:.0f} GB states + "
        f"{seven.breakdown['activations']:.1f} activations)",
        f"**{seventy.per_gpu_gb:,.0f} GB** at s = 2048; ZeRO-3 × 8: {z3.per_gpu_gb:.0f} GB/GPU "
        f"({z3_paper.per_gpu_gb:.0f} with `accounting=\"zero-paper\"`)",
        f"{seven.breakdown['activations']:.1f} GB (7B, s 2048, FlashAttention), {eager:.1f} GB without it, "
        f"{full:.1f} GB with full recompute")


def test_estimator_measured_rows() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.estimator import estimate_training_memory as tr

    a100 = 79.15 * 2**30 / 1e9
    blocks = {}
    for v in ("0.2.5", "0.2.5-pre", "v1"):
        r1 = inf("Llama-2-7B", "fp16", 4096, 1, runtime="vllm", gpu_memory_gb=a100, vllm_version=v).vllm
        r2 = inf("Llama-2-70B", "fp16", 4096, 1, tensor_parallel=4, runtime="vllm", gpu_memory_gb=a100,
                 vllm_version=v).vllm
        assert r1 is not None and r2 is not None
        blocks[v] = (r1.num_gpu_blocks, r2.num_gpu_blocks)
    (new1, new2), (pre1, pre2), (v1_1, v1_2) = blocks["0.2.5"], blocks["0.2.5-pre"], blocks["v1"]

    def pct(ours: int, measured: int) -> str:
        return f"+{(ours / measured - 1) * 100:.2f} %"

    _in("estimator.md",
        f"`0.2.5`: {new1:,} · `0.2.5-pre`: {pre1:,} (vs 7,449) · `v1`: {v1_1:,}",
        f"`0.2.5`: {new2:,} · `0.2.5-pre`: {pre2:,} (vs 31,615) · `v1`: {v1_2:,}",
        f"It gives {pre1:,} and {pre2:,} blocks against the measured 7,449 and 31,615 "
        f"({pct(pre1, 7449)} and {pct(pre2, 31615)})",
        f"It gives {new1:,} and {new2:,} against 7,351 and 20,865 ({pct(new1, 7351)} and {pct(new2, 20865)})")

    def states(opt: str) -> float:
        t = tr("Llama-2-7B", "bf16-true", opt, seq_len=512, gradient_checkpointing="full")
        return sum(v for k, v in t.breakdown.items() if k != "activations")

    _in("estimator.md", f"{states('adamw'):.1f} / {states('adamw-8bit'):.1f} / {states('sgd-no-momentum'):.1f} GB "
                        "(states + overhead) | ±10 %")


# --- docs/hardware.md ------------------------------------------------------------------------------------


def test_hardware_gpus_table_excerpt_is_the_real_output() -> None:
    from holysheep.hardware import gpus
    from holysheep.hardware._cli import render_gpus_table

    real = render_gpus_table("bf16").splitlines()
    shown = _block("hardware.md", '`gpus(sort="bf16")` (`holysheep gpus`):')
    head = [line for line in shown if not line.startswith("...")]
    assert shown[len(head) - 1].startswith("...") and f"{len(gpus())} in all" in shown[len(head) - 1]
    assert head[:-1] == real[:len(head) - 1] and head[-1] == real[-1]


@pytest.fixture(scope="module")
def awq_plan() -> PickResult:
    from holysheep.hardware import pick_hardware

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, max_gpus=8)


def test_hardware_picker_block_is_what_plan_prints() -> None:
    from holysheep.hardware._cli import run_plan

    text, _ = run_plan("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Options (objective"))
    assert _block("hardware.md", "Llama-3.1-70B, int4-awq, 8k context, batch 4 (52.8 GB") == lines[start:]


def test_hardware_break_even_block_and_prose(awq_plan: PickResult) -> None:
    from holysheep.hardware import pick_hardware
    from holysheep.pricing import break_even

    top = awq_plan[0]
    be = break_even(api_model="deepseek-v3.2", option=top, tokens_per_day=10_000_000)
    assert _block("hardware.md", "against deepseek-v3.2 at 10M tokens/day:") == be.arithmetic.rstrip("\n").splitlines()
    _in("hardware.md", f"(1 x MI300X at ${top.price_per_hour:.2f}/h, {top.decode_tokens_per_s:.1f} tok/s at batch 4)")
    (small,) = pick_hardware("llama-3.1-8b", quant="bf16", context=4096, batch=32, gpus=["mi300x"], max_gpus=1)
    be8 = break_even(api_model="deepseek-v3.2", option=small, tokens_per_day=10_000_000)
    assert be8.break_even_tokens_per_day is not None
    _in("hardware.md", f"about {small.decode_tokens_per_s:,.0f} tok/s, ${be8.self_host_cost_per_m:.2f}/M at 50 % "
                       f"utilization, with a break-even of 24 x 1.71 / 0.42 x 1e6 = "
                       f"{be8.break_even_tokens_per_day / 1e6:.1f}M tokens/day")
    nvidia = [o for o in awq_plan if o.gpu.vendor.lower() == "nvidia" and o.cost_per_million_tokens]
    _in("hardware.md", f"on NVIDIA the GH200 (${nvidia[0].cost_per_million_tokens:.2f}/M)")
    assert nvidia[0].gpu.id == "gh200"


def test_hardware_picker_facts_in_prose() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.hardware import gpu, pick_hardware

    lat = pick_hardware("llama-3.1-8b", objective="latency")
    by_id = {o.gpu.id: o for o in lat}
    assert lat[0].gpu.id == "gb200" and lat[0].count == 1 and by_id["b200"].count == 1
    _in("hardware.md", f"(a GB200 at about {lat[0].decode_tokens_per_s_batch1:.0f} tok/s, a B200 at "
                       f"{by_id['b200'].decode_tokens_per_s_batch1:.0f})")
    big = inf("llama-3.1-405b", quant="bf16", tensor_parallel=8)
    assert not big.fits("H100", 8) and big.fits("H200", 8)
    _in("hardware.md", f"does not fit 8 x H100-80GB ({big.per_gpu_gb:.1f} GB per GPU) but fits 8 x H200",
        f"DeepSeek-V3 FP8 needs {inf('deepseek-v3', tensor_parallel=8).per_gpu_gb:.1f} GB per GPU on 8 x H100 "
        f"({gpu('H100').memory_gb:.1f} GB each)",
        f"two 64 GiB ({gpu('mi250x').memory_gb / 2:.2f} GB) devices")


def test_hardware_api_cost_recomputation() -> None:
    from holysheep.pricing import compare_api_costs

    def annual(model: str, fraction: float | None = None) -> str:
        text = str(compare_api_costs(model, "deepseek-v3.2", tokens_per_day=10_000_000, input_fraction=fraction))
        found = re.search(r"Annual difference = .* = \$([\d,]+\.\d\d)", text)
        assert found, text
        return found.group(1)

    block = "\n".join(_block("hardware.md", '"$60,000+ a year" claim, recomputed'))
    assert f"= ${annual('gpt-4.1')}" in block and f"= ${annual('gpt-4.1', 0.75)}" in block
    _in("hardware.md", f"gpt-4o gives ${annual('gpt-4o').split('.')[0]} (all tokens at output price) or "
                       f"${annual('gpt-4o', 0.75).split('.')[0]} (75 % prompt)",
        f"claude-sonnet-4.5 at its output price gives only ${annual('claude-sonnet-4.5').split('.')[0]}",
        f"60,000 / 365 / 10 = ${60_000 / 365 / 10:.2f} per million", f"above about ${60_000 / 365 / 10 + 0.42:.2f}/M")


# --- every `holysheep plan` / `holysheep gpus` command the planner pages show runs as written ---------------

_COMMAND = re.compile(r"(?:^\$ |^|`)(holysheep (?:plan|gpus)\b[^`\n#]*)", re.MULTILINE)


def _documented_commands() -> list[str]:
    found: list[str] = []
    for name in ("cli.md", "estimator.md", "hardware.md", "index.md"):
        for command in _COMMAND.findall((ROOT / "docs" / name).read_text(encoding="utf-8")):
            command = command.strip()
            runnable = len(command.split()) > 2 or command == "holysheep gpus"  # not the bare "holysheep plan"
            if runnable and "MODEL" not in command and "[" not in command and command not in found:
                found.append(command)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found += [c.strip() for c in re.findall(r"\.venv/bin/(holysheep plan [^\n]*)", readme) if c.strip() not in found]
    return found


def test_the_documented_commands_are_found() -> None:
    commands = _documented_commands()
    assert "holysheep plan llama-3.1-8b --gpus 4090 --context 32k" in commands
    assert "holysheep plan llama-3.1-8b --gpus L4 --context 8k" in commands
    assert "holysheep plan llama-3.1-70b --train qlora --seq-len 1024 --gpus L40S" in commands
    assert len(commands) >= 12, commands


@pytest.mark.parametrize("command", _documented_commands())
def test_a_documented_command_runs(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    from holysheep.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(shlex.split(command)[1:]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert ("option" in out or '"options"' in out) if " plan " in command else "BF16" in out, out[-2000:]

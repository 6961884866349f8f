"""The figures docs/hardware.md quotes are the ones the code gives with the defaults, and every `holysheep plan|gpus`
command the planner pages show runs. Each assertion computes the number with the real picker, pricing and CLI
renderers and looks for it, formatted as the page writes it, in the page (whitespace-normalised). The blocks the
page takes whole from the data (the GPU table, the picker's and break-even's output, the API prices) are generated
by `tools/gen_docs.py` and checked in tests/docs/test_generated.py."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING

import pytest

from ._pages import block, says
from ._util import ROOT

if TYPE_CHECKING:
    from holysheep.hardware import PickResult



# --- docs/hardware.md ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def awq_plan() -> PickResult:
    from holysheep.hardware import pick_hardware

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, max_gpus=8,
                             objective="cost_per_token")


def test_hardware_break_even_prose(awq_plan: PickResult) -> None:
    from holysheep.hardware import pick_hardware
    from holysheep.pricing import break_even

    top = awq_plan[0]
    says("hardware.md", f"(1 x MI300X at ${top.price_per_hour:.2f}/h, {top.decode_tokens_per_s:.1f} tok/s at batch 4)")
    (small,) = pick_hardware("llama-3.1-8b", quant="bf16", context=2048, batch=32, gpus=["mi300x"], max_gpus=1)
    be8 = break_even(api_model="deepseek-v3.2", option=small, tokens_per_day=10_000_000)
    assert be8.break_even_tokens_per_day is not None
    says("hardware.md", f"about {small.decode_tokens_per_s:,.0f} tok/s, ${be8.self_host_cost_per_m:.2f}/M at 50 % "
                       f"utilization, with a break-even of 24 x 1.71 / 0.42 x 1e6 = "
                       f"{be8.break_even_tokens_per_day / 1e6:.1f}M tokens/day")
    nvidia = [o for o in awq_plan if o.gpu.vendor.lower() == "nvidia" and o.cost_per_million_tokens]
    says("hardware.md", f"on NVIDIA the GH200 (${nvidia[0].cost_per_million_tokens:.2f}/M)")
    assert nvidia[0].gpu.id == "gh200"


def test_hardware_picker_facts_in_prose() -> None:
    from holysheep.estimator import estimate_inference_memory as inf
    from holysheep.hardware import gpu, pick_hardware

    lat = pick_hardware("llama-3.1-8b", objective="latency")
    by_id = {o.gpu.id: o for o in lat}
    assert lat[0].gpu.id == "gb200" and lat[0].count == 1 and by_id["b200"].count == 1
    says("hardware.md", f"(a GB200 at about {lat[0].decode_tokens_per_s_batch1:.0f} tok/s, a B200 at "
                       f"{by_id['b200'].decode_tokens_per_s_batch1:.0f})")
    big = inf("llama-3.1-405b", quant="bf16", tensor_parallel=8)
    assert not big.fits("H100", 8) and big.fits("H200", 8)
    says("hardware.md", f"does not fit 8 x H100-80GB ({big.per_gpu_gb:.1f} GB per GPU) but fits 8 x H200",
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

    shown = "\n".join(block("hardware.md", '"$60,000+ a year" claim, recomputed'))
    assert f"= ${annual('gpt-4.1')}" in shown and f"= ${annual('gpt-4.1', 0.75)}" in shown
    says("hardware.md", f"gpt-4o gives ${annual('gpt-4o').split('.')[0]} (all tokens at output price) or "
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


# --- docs/hardware.md, speed validation: the summary of the rows' errors ------------------------


def test_the_speed_validation_summary_is_what_the_model_gives() -> None:
    """The rows' table is generated (`speed-validation-rows`); its summary and the prose quoting it are checked here."""
    import statistics

    from tests.hardware.test_speed_validation import ROWS, _modelled

    errors: dict[str, list[float]] = {"all": [], "check": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in ROWS:
            err = abs(_modelled(row) / row["tokens_per_s"] - 1)
            errors["all"].append(err)
            if row["role"] == "check":
                errors["check"].append(err)

    def within(errs: list[float]) -> float:
        return sum(e <= 0.35 for e in errs) / len(errs) * 100

    every, check = errors["all"], errors["check"]
    median_all, median_check = statistics.median(every) * 100, statistics.median(check) * 100
    says("hardware.md",
        f"| speed model v2, all rows | {len(every)} | **{within(every):.1f} %** | **{median_all:.1f} %** |",
        f"| speed model v2, `check` rows only | {len(check)} | {within(check):.1f} % | {median_check:.1f} % |",
        f"`check`, {len(check)} rows", f"{len(ROWS)} published rows, each with its source",
        f"checked against {len(ROWS)} published rows ({within(every):.0f} % within ±35 %)")


# --- docs/hardware.md: the default efficiencies and the API price table ------------------------------------


def _rows(after: str) -> dict[str, list[str]]:
    text = (ROOT / "docs" / "hardware.md").read_text(encoding="utf-8")
    start = text.index("\n|", text.index(after))
    section = text[start:text.index("\n\n", start)]
    return {cells[0]: cells[1:] for line in section.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}


def test_the_efficiencies_table_is_the_defaults() -> None:
    from dataclasses import fields

    from holysheep.hardware import Efficiencies

    rows = _rows("Default efficiencies (`Efficiencies()`")
    defaults = Efficiencies()
    shown = {k.split("`")[1]: v[0] for k, v in rows.items() if k.startswith("`")}
    assert shown == {f.name: f"{getattr(defaults, f.name):.2f}" for f in fields(defaults)}


def test_the_readme_plan_prints_what_the_readme_says(capsys: pytest.CaptureFixture[str]) -> None:
    """README: "It prints the memory per GPU (weights, KV cache, activations, overhead), the GPUs that can serve it,
    cheapest per hour first, with their decode throughput and $/M tokens, and the GPUs rejected with the reason"."""
    from holysheep.cli import main

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "It prints the memory per GPU (weights, KV cache, activations, overhead), the GPUs that can serve it, " \
           "cheapest per hour first, with their decode throughput and $/M tokens, and the GPUs rejected with the " \
           "reason." in readme
    assert main(["plan", "llama-3.1-70b", "--quant", "int4-awq", "--context", "8192", "--batch", "4"]) == 0
    out = capsys.readouterr().out
    for row in ("weights", "kv_cache", "activations", "overhead"):
        assert f"\n{row} " in out, row
    header = next(line for line in out.splitlines() if line.startswith("option "))
    assert "decode tok/s" in header and header.rstrip().endswith("$/M tok")
    options = out[out.index(header):out.index("\nRejected")].splitlines()[2:]
    hourly = [float(line.split()[-2]) for line in options if line[:1].isdigit()]
    assert len(hourly) == 5 and hourly == sorted(hourly)
    assert "\nRejected\ngpu " in out and "no int4 AWQ kernel for compute capability 7.0" in out


def test_the_communication_constants_table_is_the_code() -> None:
    from holysheep.hardware._overheads import EP_DISPATCH_COMBINE_S
    from holysheep.hardware._speed import _PCIE_GB_S, HOP_US, MOE_LAYER_US, NVLINK_US, PCIE_US

    rows = _rows("Communication constants (`holysheep.hardware._speed.SPEED_SOURCES`)")
    assert rows["NVLink all-reduce"][0] == f"{NVLINK_US[0]:g} + {NVLINK_US[1]:g} log2(T) us, two per layer"
    assert rows["PCIe all-reduce"][0] == (f"{PCIE_US[0]:g} + {PCIE_US[1]:g} log2(T) us; "
                                          f"{_PCIE_GB_S[4]:g} / {_PCIE_GB_S[5]:g} GB/s")
    assert rows["layer-split hop"][0] == f"{HOP_US:g} us + hidden state over PCIe"
    assert rows["expert parallel"][0].startswith(
        f"most-loaded GPU; dispatch + combine {EP_DISPATCH_COMBINE_S * 1e6:.0f} us per MoE layer")
    assert rows["expert parallel"][0].endswith(f"{MOE_LAYER_US:g} us routing per MoE layer")


def test_the_runtime_costs_table_is_the_code() -> None:
    from holysheep.hardware._overheads import runtime_cost

    def t(s: float) -> str:
        return "0" if s == 0 else f"{s * 1e3:g} ms" if s >= 1e-3 else f"{s * 1e6:g} us"

    rows = _rows("| runtime (backend) | step_s |")
    for label, (runtime, vendor) in {"default (compiled, CUDA graphs: gpt-fast)": ("default", "nvidia"),
                                     "vLLM": ("vllm", "nvidia"), "SGLang": ("sglang", "nvidia"),
                                     "transformers (eager)": ("hf", "nvidia"),
                                     "llama.cpp (CUDA)": ("llama.cpp", "nvidia"),
                                     "llama.cpp (Metal)": ("llama.cpp", "apple"),
                                     "llama.cpp (ROCm/HIP, other)": ("llama.cpp", "amd"),
                                     "MLX": ("mlx", "apple")}.items():
        cost = runtime_cost(runtime, vendor)
        host = t(cost.host_layer_s)
        if runtime == "hf":  # host time per layer, in ms as the table writes it
            awq = runtime_cost("hf", vendor, awq=True).host_layer_s
            host = (f"{cost.host_layer_s * 1e3:g} ms (AutoAWQ {awq * 1e3:.1f} ms) + {t(cost.host_expert_s)} per routed "
                    "expert of each MoE layer")
        assert rows[label][:3] == [t(cost.step_s), t(cost.layer_s), host], label
    fp8 = runtime_cost("hf", "nvidia", fp8=True).host_linear_s
    assert f"FP8 checkpoints add 2 x {fp8 / 2 * 1e6:g} us per linear layer" in rows["transformers (eager)"][3]

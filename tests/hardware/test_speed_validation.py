"""The speed model against published decode results (hardware/data/decode_benchmarks.json), and pinned picks."""

from __future__ import annotations

import json
import re
import statistics
from importlib import resources
from typing import Any

import pytest

from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import gpu, pick_hardware, prefill_tokens_per_s
from holysheep.hardware._overheads import OVERHEAD_SOURCES, runtime_cost
from holysheep.hardware._speed import expected_max_load, link_kind

ROWS: list[dict[str, Any]] = json.loads(
    resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text())["rows"]


def _batch1(model: str, quant: str, gpu_id: str, count: int, context: int, runtime: str = "default") -> float:
    est = estimate_inference_memory(model, quant, context, runtime=runtime)
    (opt,) = pick_hardware(est, gpus=[gpu_id], gpu_count=count)
    assert opt.decode_tokens_per_s_batch1 is not None
    return opt.decode_tokens_per_s_batch1


def _modelled(row: dict[str, Any]) -> float:
    est = estimate_inference_memory(row["model"], row["quant"], row["context"], row["batch"], runtime=row["runtime"],
                                    vllm_version=row.get("vllm_version", "v1"),
                                    sglang_version=row.get("sglang_version"), kv_dtype=row.get("kv_dtype"))
    (opt,) = pick_hardware(est, gpus=[row["gpu"]], gpu_count=row["count"])
    got = opt.decode_tokens_per_s_batch1 if row["batch"] == 1 else opt.decode_tokens_per_s
    assert got is not None
    return got


def _errors(rows: list[dict[str, Any]]) -> list[float]:
    return [_modelled(r) / r["tokens_per_s"] - 1 for r in rows]


def test_at_least_150_sourced_dated_rows_across_runtimes() -> None:
    assert len(ROWS) >= 150
    assert all(r["source"].startswith("https://") and len(r["as_of"]) >= 7 for r in ROWS)
    assert {r["runtime"] for r in ROWS} == {"default", "vllm", "sglang", "hf", "llama.cpp", "tensorrt-llm",
                                            "lmdeploy"}
    assert {r["role"] for r in ROWS} == {"calibration", "check"}
    assert sum(r["role"] == "check" for r in ROWS) >= 150


def test_speed_model_v2_accuracy_on_the_validation_set() -> None:
    """Docs (hardware.md, "Validation") quote these figures: keep them in step.

    The set grew from 67 to 237 rows with rows the model was never fitted to (issue 39); it no longer meets
    the 90 % / 15 % target it met on the first 67, and docs/hardware.md says which regimes miss.
    """
    errs = _errors(ROWS)
    within = sum(abs(e) <= 0.35 for e in errs) / len(errs)
    median = statistics.median(abs(e) for e in errs)
    assert (len(errs), round(within, 3), round(median, 3)) == (358, 0.852, 0.104)
    check = _errors([r for r in ROWS if r["role"] == "check"])
    within_check = sum(abs(e) <= 0.35 for e in check) / len(check)
    assert (len(check), round(within_check, 3), round(statistics.median(abs(e) for e in check), 3)) == (
        340, 0.847, 0.105)
    first = _errors(ROWS[:67])  # the rows the constants were chosen with (SGLang PR #2643's now within, issue 39)
    assert (round(sum(abs(e) <= 0.35 for e in first) / 67, 3), round(statistics.median(abs(e) for e in first), 3)) == (
        0.97, 0.054)


def test_runtime_costs_are_sourced_and_exact() -> None:
    assert runtime_cost("vllm", "nvidia").step_s == 2.5e-3
    assert runtime_cost("sglang", "nvidia").step_s == 1.5e-3
    assert runtime_cost("hf", "nvidia").host_layer_s == 0.75e-3
    assert runtime_cost("hf", "nvidia", awq=True).host_layer_s == 1.0e-3
    assert runtime_cost("hf", "nvidia").host_expert_s == runtime_cost("hf", "nvidia", awq=True).host_expert_s == 80e-6
    assert runtime_cost("vllm", "nvidia").host_expert_s == 0.0
    assert runtime_cost("llama.cpp", "nvidia").layer_s == 60e-6
    assert runtime_cost("llama.cpp", "apple").layer_s == 155e-6
    assert runtime_cost("llama.cpp", "amd").layer_s == 90e-6
    assert runtime_cost("mlx", "apple").layer_s == 100e-6
    assert runtime_cost("default", "nvidia") == runtime_cost("nope", "nvidia")
    assert len(OVERHEAD_SOURCES) >= 10 and all(len(v) > 40 for v in OVERHEAD_SOURCES.values())


def _vllm_batch1(model: str, gpu_id: str, version: str) -> float:
    est = estimate_inference_memory(model, "bf16", 2048, runtime="vllm", vllm_version=version)
    (opt,) = pick_hardware(est, gpus=[gpu_id], gpu_count=1)
    assert opt.decode_tokens_per_s_batch1 is not None
    return opt.decode_tokens_per_s_batch1


def test_vllm_step_cost_follows_the_release() -> None:
    """Up to 0.13 the 2.5 ms host step follows the GPU's; from 0.14 (async scheduling) it overlaps it."""
    # Qwen2.5-7B BF16 on one A100-80GB, 2,048 context: weights and KV at 0.7 of 2,039 GB/s (9.7 ms)
    plain = _batch1("qwen2.5-7b", "bf16", "a100-80-sxm", 1, 2048, "default")
    for version in ("v0", "0.8"):
        assert 1 / _vllm_batch1("qwen2.5-7b", "a100-80-sxm", version) == pytest.approx(1 / plain + 2.5e-3)
    assert round(_vllm_batch1("qwen2.5-7b", "a100-80-sxm", "v0"), 2) == 80.06
    assert _vllm_batch1("qwen2.5-7b", "a100-80-sxm", "v1") == pytest.approx(plain)  # the GPU's 9.7 ms is longer
    # Qwen2.5-0.5B on an H100: a 0.4 ms weight read, so V1's step is the host's 2.5 ms, and V0's the sum
    small = _batch1("qwen2.5-0.5b", "bf16", "h100-sxm", 1, 2048, "default")
    assert 1 / small < 2.5e-3
    assert _vllm_batch1("qwen2.5-0.5b", "h100-sxm", "v1") == pytest.approx(400.0)
    assert 1 / _vllm_batch1("qwen2.5-0.5b", "h100-sxm", "v0") == pytest.approx(1 / small + 2.5e-3)


def test_transformers_is_host_bound_for_small_models() -> None:
    # 24 layers x 0.75 ms + 1 ms; the 1 GB weight read is far shorter
    assert _batch1("qwen2.5-0.5b", "bf16", "a100-80-sxm", 1, 2048, "hf") == pytest.approx(1 / (24 * 0.75e-3 + 1e-3))
    assert _batch1("qwen2.5-0.5b", "int4-awq", "a100-80-sxm", 1, 2048, "hf") == pytest.approx(1 / (24e-3 + 1e-3))


def test_transformers_moe_loops_over_every_expert() -> None:
    # Qwen3-30B-A3B: 48 MoE layers x 128 experts at 80 us on the host, plus 0.75 ms a layer and 1 ms a step;
    # the Qwen3 table measured 1.89 tok/s (transformers 4.51, H20)
    got = _batch1("qwen3-30b-a3b", "bf16", "h20", 1, 2049, "hf")
    assert got == pytest.approx(1 / (48 * (0.75e-3 + 128 * 80e-6) + 1e-3))
    assert round(got, 2) == 1.89
    assert _batch1("qwen3-30b-a3b", "bf16", "h20", 1, 2049, "sglang") > 50 * got  # fused MoE kernels


def test_8b_latency_pick_uses_at_most_two_gpus() -> None:
    res = pick_hardware("llama-3.1-8b", objective="latency")
    assert res[0].count <= 2


def test_deepseek_v3_fp8_on_8x_h200_decodes_at_10_to_150_tok_s() -> None:
    for runtime in ("vllm", "sglang"):
        got = _batch1("deepseek-v3", "fp8", "h200", 8, 4096, runtime)
        assert 10 <= got <= 150, (runtime, got)


def test_link_kinds() -> None:
    assert link_kind(gpu("H100 SXM"), 8) == "switch"
    assert link_kind(gpu("H100 NVL"), 2) == "bridge" and link_kind(gpu("H100 NVL"), 8) == "pcie"
    assert link_kind(gpu("A100 80GB PCIe"), 4) == "pcie" and link_kind(gpu("L40S"), 2) == "pcie"
    # NVLink-bridge parts lose the fast factor beyond their pair
    nvl2, nvl8 = (_batch1("llama-3.1-70b", "fp8", "h100-nvl", c, 2048, "vllm") for c in (2, 8))
    sxm8 = _batch1("llama-3.1-70b", "fp8", "h100-sxm", 8, 2048, "vllm")
    assert nvl8 < sxm8 and nvl8 / nvl2 < 2.5
    est = estimate_inference_memory("llama-3.1-70b", "fp8", 2048, runtime="vllm")
    (opt,) = pick_hardware(est, gpus=["h100-nvl"], gpu_count=8)
    assert "NVLink bridges join pairs only: 8 GPUs run tensor parallel over PCIe between them" in opt.notes


def test_runtime_bandwidth_efficiency_differs() -> None:
    gguf = _batch1("llama-3.1-8b", "q4_k_m", "rtx4090", 1, 2048, "llama.cpp")
    awq = _batch1("llama-3.1-8b", "int4-awq", "rtx4090", 1, 2048, "vllm")
    hf_awq = _batch1("llama-3.1-8b", "int4-awq", "rtx4090", 1, 2048, "hf")
    assert awq > hf_awq  # Marlin on vLLM vs AutoAWQ under an eager host
    from holysheep.hardware import DEFAULT_EFFICIENCIES as eff
    from holysheep.hardware._roofline import bandwidth_efficiency

    g = gpu("rtx4090")
    assert bandwidth_efficiency(g, eff, weight_only_int4=True, runtime="llama.cpp") == 0.80
    assert bandwidth_efficiency(g, eff, weight_only_int4=True, runtime="vllm") == 0.60
    assert bandwidth_efficiency(g, eff, weight_only_int4=True, runtime="hf") == 0.50
    assert gguf > awq  # Q4_K_M also quantizes the lm_head that AWQ keeps in 16 bit


def test_prefill_counts_the_attention_term() -> None:
    g = gpu("H100")
    short = prefill_tokens_per_s(g, 1, active_params=8.03e9, layers=32, attention_dim=4096, prompt_tokens=1)
    long = prefill_tokens_per_s(g, 1, active_params=8.03e9, layers=32, attention_dim=4096, prompt_tokens=32768)
    assert short is not None and long is not None
    assert short / long == pytest.approx(1 + 2 * 32 * 4096 * 32768 / (2 * 8.03e9), rel=1e-3)
    assert short / long == pytest.approx(1.54, abs=0.01)


def test_expected_max_load() -> None:
    assert expected_max_load(1, 8) == pytest.approx(1.0)
    assert expected_max_load(2, 2) == pytest.approx(1.5)
    assert 2.0 < expected_max_load(8, 8) < 3.0


def test_int4_kernels_follow_the_vllm_release_and_the_gpu() -> None:
    """Marlin (eta 0.60) needs compute capability 8.0+ and a vLLM with the kernels; else AWQ's GEMM (0.50)."""
    from holysheep.hardware._roofline import DEFAULT_EFFICIENCIES, bandwidth_efficiency, uses_marlin

    def rate(gpu_id: str, version: str) -> float:
        est = estimate_inference_memory("llama-3.1-8b", "int4-awq", 2048, runtime="vllm", vllm_version=version)
        (opt,) = pick_hardware(est, gpus=[gpu_id], gpu_count=1)
        assert opt.decode_tokens_per_s is not None
        return opt.decode_tokens_per_s

    assert uses_marlin(gpu("A100 80GB"), "vllm") and not uses_marlin(gpu("T4"), "vllm")
    assert not uses_marlin(gpu("A100 80GB"), "vllm", marlin=False) and not uses_marlin(gpu("MI300X"), "vllm")
    # 0.2.5 also reads the KV cache once per query head (4 for Llama-3.1-8B, 3 from L2): 131.3 from the kernel alone
    assert (round(rate("a100-80-sxm", "v0"), 1), round(rate("a100-80-sxm", "0.2.5"), 1)) == (152.8, 119.0)
    # no Marlin on compute capability 7.5 in any release (0.2.5 is slower only by its decode attention)
    assert bandwidth_efficiency(gpu("T4"), DEFAULT_EFFICIENCIES, weight_only_int4=True, runtime="vllm") == 0.5


def test_vllm_0_4_runs_gptq_through_marlin_but_not_awq() -> None:
    """vLLM 0.4.1-0.5.2 had GPTQ Marlin (PR #3922) but not AWQ Marlin (0.5.3, PR #6612)."""

    def rate(quant: str, version: str) -> float:
        est = estimate_inference_memory("llama-3.1-8b", quant, 2048, runtime="vllm", vllm_version=version)
        (opt,) = pick_hardware(est, gpus=["a100-80-sxm"], gpu_count=1)
        assert opt.decode_tokens_per_s is not None
        return opt.decode_tokens_per_s

    assert round(rate("int4-awq", "0.4"), 1) == round(rate("int4-awq", "0.2.5"), 1) == 119.0
    assert rate("int4-gptq", "v1") > rate("int4-gptq", "0.4") > rate("int4-gptq", "0.2.5")
    assert sum(r.get("vllm_version") == "0.4" for r in ROWS) == 67  # the Qwen2 table's vLLM 0.4.2 rows


def test_every_vllm_row_names_its_release() -> None:
    """The step cost depends on the release: 0.4.2 rows "0.4", 0.6.3 and 0.7.4 rows "v0", 0.21-0.23 rows "v1";
    SGLang's DeepSeek rows name theirs too (0.4.1.post2, 0.4.3.post2: the Triton fused-MoE term)."""
    vllm = [r for r in ROWS if r["runtime"] == "vllm"]
    assert all("vllm_version" in r for r in vllm)
    counts = {v: sum(r["vllm_version"] == v for r in vllm) for v in ("0.4", "v0", "v1")}
    assert counts == {"0.4": 67, "v0": 27, "v1": 13}
    assert all(re.search(r"v?0\.2[1-3]", r["notes"]) for r in vllm if r["vllm_version"] == "v1")  # 0.14+
    assert all(re.search(r"vLLM 0\.(6\.3|7\.4)", r["notes"]) for r in vllm if r["vllm_version"] == "v0")
    sglang = {r["sglang_version"]: r["model"] for r in ROWS if "sglang_version" in r}
    assert sglang == {"0.4.1.post2": "DeepSeek-V3", "0.4.3.post2": "DeepSeek-R1"}
    assert all(f"SGLang {v}" in r["notes"] or f"SGLang v{v}" in r["notes"] for r in ROWS
               for v in [r.get("sglang_version")] if v)

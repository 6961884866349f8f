"""The speed model against published decode results (hardware/data/decode_benchmarks.json), and pinned picks."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import gpu, pick_hardware, prefill_tokens_per_s
from holysheep.hardware._speed import expected_max_load, link_kind

ROWS: list[dict[str, Any]] = json.loads(
    resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text())["rows"]


def _batch1(model: str, quant: str, gpu_id: str, count: int, context: int, runtime: str = "default") -> float:
    est = estimate_inference_memory(model, quant, context, runtime=runtime)
    (opt,) = pick_hardware(est, gpus=[gpu_id], gpu_count=count)
    assert opt.decode_tokens_per_s_batch1 is not None
    return opt.decode_tokens_per_s_batch1


def test_there_are_at_least_six_sourced_rows() -> None:
    assert len(ROWS) >= 6 and all(r["source"].startswith("https://") for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['model']}-{r['quant']}-{r['count']}x{r['gpu']}")
def test_model_within_35_percent_of_published_decode(row: dict[str, Any]) -> None:
    got = _batch1(row["model"], row["quant"], row["gpu"], row["count"], row["context"], row["runtime"])
    assert got == pytest.approx(row["tokens_per_s"], rel=0.35), (got, row["tokens_per_s"])


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
    assert awq / hf_awq == pytest.approx(0.60 / 0.50)  # Marlin on vLLM vs AWQ kernels elsewhere
    from holysheep.hardware import DEFAULT_EFFICIENCIES as eff
    from holysheep.hardware._roofline import bandwidth_efficiency

    g = gpu("rtx4090")
    assert bandwidth_efficiency(g, eff, weight_only_int4=True, runtime="llama.cpp") == 0.65
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

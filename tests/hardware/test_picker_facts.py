"""The picker against known facts (issue 6), using the real estimator."""

from __future__ import annotations

import json

import pytest

from holysheep.estimator import estimate_inference_memory, estimate_training_memory
from holysheep.hardware import pick_hardware
from holysheep.hardware._cli import run_plan


def test_llama_3_1_70b_int4_8k_batch4_fits_one_80gb_gpu() -> None:
    est = estimate_inference_memory("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    res = pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, batch=4,
                        gpus=["h100", "a100 80gb", "h100 pcie"])
    assert [o.count for o in res] == [1, 1, 1]
    assert res.rejected == []
    for o in res:
        assert o.fits and o.per_gpu_gb == pytest.approx(est.per_gpu_gb)
        assert o.per_gpu_gb is not None and o.per_gpu_gb < 0.9 * 80
    # estimator.md section 9: ~47-51 GB plus 1-5 GB of prefill/workspace
    assert 47 < est.per_gpu_gb < 56


def test_llama_2_7b_full_finetune_adamw_does_not_fit_one_a100_but_fits_with_zero3() -> None:
    single = estimate_training_memory("llama-2-7b", precision="bf16-mixed", optimizer="adamw", method="full")
    (rej,) = pick_hardware(single, gpus=["a100 80gb"], max_gpus=1).rejected
    assert rej.reason_code == "does_not_fit" and rej.per_gpu_gb is not None and rej.per_gpu_gb > 85.9
    # ZeRO-0 replicates the states: more GPUs do not help
    assert list(pick_hardware(single, gpus=["a100 80gb"], max_gpus=8)) == []
    zero3 = estimate_training_memory("llama-2-7b", precision="bf16-mixed", optimizer="adamw", method="full",
                                     zero_stage=3)
    (opt,) = pick_hardware(zero3, gpus=["a100 80gb"], max_gpus=8)
    # an "80 GB" A100 holds 80 GiB = 85.9 GB, less the 5 % training reserve: 83.2 GB per GPU at 2x misses
    assert opt.fits and opt.count == 4 and opt.usable_gb_per_gpu == pytest.approx(85.9 * 0.95)
    assert opt.per_gpu_gb == pytest.approx(zero3.with_num_gpus(4).per_gpu_gb)
    assert 85.9 * 0.95 < zero3.with_num_gpus(2).per_gpu_gb < 85.9


def test_llama_3_1_405b_bf16_does_not_fit_8x_h100_but_fits_8x_h200() -> None:
    res = pick_hardware("llama-3.1-405b", quant="bf16", gpus=["h100", "h200"], max_gpus=8)
    assert [(o.gpu.id, o.count) for o in res] == [("h200-sxm", 8)]
    (h100,) = res.rejected
    assert (h100.gpu.id, h100.count, h100.reason_code) == ("h100-sxm", 8, "does_not_fit")
    assert h100.per_gpu_gb is not None and h100.per_gpu_gb > 80  # even before the 0.9 usable fraction


def test_fp8_is_rejected_on_a100() -> None:
    res = pick_hardware("llama-3.1-8b", quant="fp8", gpus=["a100 80gb", "h100", "l40s"])
    assert [(o.gpu.id, o.count) for o in res] == [("l40s", 1), ("h100-sxm", 1)]  # cheapest per hour first
    (a100,) = res.rejected
    assert a100.reason_code == "no_native_precision"
    assert a100.reason == "no native fp8 path on A100 80GB SXM4 (quant needs fp8 tensor cores)"


def test_heads_limit_tensor_parallel_degree() -> None:
    """128 query / 8 KV heads: TP 16 splits the query heads and replicates each KV head on 2 GPUs (vLLM's rule)."""
    res = pick_hardware("llama-3.1-405b", quant="bf16", gpus=["h100"], max_gpus=16)
    assert [o.count for o in res] == [16] and res.rejected == []
    odd = pick_hardware("llama-3.1-405b", quant="bf16", gpus=["h100"], gpu_count=12)
    assert odd.rejected[0].reason_code == "heads_not_divisible"


def test_plan_text_and_json() -> None:
    text, data = run_plan("llama-3.1-70b", quant="int4-awq", context=8192, batch=4, api_model="deepseek-v3.2",
                          tokens_per_day=1e7, top=3)
    assert text.startswith("Plan: llama-3.1-70b (inference, default), quant int4-awq, context 8192, batch 4")
    for section in ("Memory on one device (no tensor parallelism)", "Options (objective: cost)", "Rejected",
                    "API comparison: deepseek-v3.2"):
        assert section in text
    assert len(data["options"]) == 3 and data["options"][0]["count"] == 1
    be = data["api_comparison"]["break_even"]
    assert be["api_price_per_m"] == 0.42 and be["api_cost_per_day"] == pytest.approx(4.2)
    json.dumps(data)  # machine output must serialise
    ttext, tdata = run_plan("llama-2-7b", train=True, method="full", zero_stage=3, gpus=["a100 80gb"])
    # 72.5 GB per GPU at 2 GPUs fits 80 GB: the CUDA context is already counted, no 0.9 on top
    assert "train tok/s" in ttext and tdata["mode"] == "training" and tdata["options"][0]["count"] == 2
    assert tdata["options"][0]["per_gpu_gb"] == pytest.approx(72.5, abs=0.05)


def test_plan_header_does_not_call_the_one_device_figure_per_gpu_above_multi_gpu_picks() -> None:
    """deepseek-v3 (FP8, 674 GB) only fits on 4+ GPUs: the header's figure is the one-device total, and the
    options carry their own per-GPU figure."""
    text, data = run_plan("deepseek-v3", top=3)
    assert "Memory on one device (no tensor parallelism): 674.10 GB; each option below shows its own GB/GPU" in text
    assert "Memory per GPU" not in text
    assert data["memory"]["tensor_parallel"] == 1 and data["memory"]["per_gpu_gb"] == pytest.approx(674.10, abs=0.005)
    assert all(o["count"] >= 4 and o["per_gpu_gb"] < 200 for o in data["options"])

"""The Triton fused-MoE cost: scoped to its releases and path, fitted per fold, and what the plan says."""

from __future__ import annotations

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import pick_hardware
from holysheep.hardware._overheads import OVERHEAD_SOURCES, TRITON_MOE_LAYER_S

from .crossval import cases, fit


def _b1(model: str, quant: str = "fp8", count: int = 8, **kw: object) -> float:
    (o,) = pick_hardware(estimate_inference_memory(model, quant, 384, **kw), gpus=["h200-sxm"], gpu_count=count)
    assert o.decode_tokens_per_s_batch1 is not None
    return o.decode_tokens_per_s_batch1


def test_the_cost_is_58_layers_a_step_in_the_triton_releases_only() -> None:
    """DeepSeek-V3 FP8 on 8 x H200: each of its 58 MoE layers pays 510 us under SGLang 0.4.0-0.4.3 and vLLM's V0
    engine (the published rows: 30.29 tok/s at batch 1 for SGLang 0.4.1.post2), nowhere else."""
    assert TRITON_MOE_LAYER_S == 510e-6 and "PR #2643" in OVERHEAD_SOURCES["triton_moe_layer"]
    current = _b1("deepseek-v3", runtime="sglang")
    old = _b1("deepseek-v3", runtime="sglang", sglang_version="0.4.1.post2")
    assert round(current, 1) == 112.5 and round(old, 1) == 26.0
    assert 1 / old - 1 / current == pytest.approx(58 * 510e-6, abs=1e-9)  # one step, batch 1
    for version in ("0.4.0", "0.4.3", "0.4.3.post2"):
        assert _b1("deepseek-v3", runtime="sglang", sglang_version=version) == old
    for version in ("0.4.4", "0.4.6", "0.5.2"):  # later releases: the current model
        assert _b1("deepseek-v3", runtime="sglang", sglang_version=version) == current
    v0, v08 = (_b1("deepseek-v3", runtime="vllm", vllm_version=v) for v in ("v0", "0.8"))
    assert 1 / v0 - 1 / v08 == pytest.approx(58 * 510e-6, abs=1e-9)  # "0.8": the same host step, no term
    assert 1 / v08 - 1 / _b1("deepseek-v3", runtime="vllm") == pytest.approx(2.5e-3, abs=1e-9)  # v1: overlapped
    # not the path the rows ran: BF16 weights, whole experts per GPU, 128 experts (Qwen3-235B-A22B, within ±10 %)
    assert _b1("deepseek-v3", "bf16", 16, runtime="sglang", sglang_version="0.4.3") == _b1(
        "deepseek-v3", "bf16", 16, runtime="sglang")
    assert _b1("deepseek-v3", runtime="sglang", sglang_version="0.4.3", expert_parallel=True) == _b1(
        "deepseek-v3", runtime="sglang", expert_parallel=True)
    assert _b1("qwen3-235b-a22b", runtime="sglang", sglang_version="0.4.3") == _b1(
        "qwen3-235b-a22b", runtime="sglang")


def test_sglang_version_is_checked_before_any_estimate() -> None:
    est = estimate_inference_memory("deepseek-v3", runtime="sglang", sglang_version="0.4.3.post2")
    assert est.sglang_version == "0.4.3.post2" and est.with_tensor_parallel(8).sglang_version == "0.4.3.post2"
    assert estimate_inference_memory("deepseek-v3", runtime="sglang").sglang_version is None
    with pytest.raises(InvalidRequestError, match=r"sglang_version applies to runtime='sglang', not 'vllm'") as e:
        estimate_inference_memory("deepseek-v3", runtime="vllm", sglang_version="0.4.3")
    assert e.value.field == "sglang_version"
    with pytest.raises(InvalidRequestError, match=r"sglang_version must look like 0\.4\.3 or 0\.4\.3\.post2, "
                                                  r"got '0\.4'"):
        estimate_inference_memory("deepseek-v3", runtime="sglang", sglang_version="0.4")


def test_each_publication_is_scored_with_a_cost_fitted_on_the_other() -> None:
    """Leave-one-source-out: the cost comes from the training fold's rows in its regime only, and the runtime
    factors from the rows outside it (so SGLang's step keeps its shipped value when the Qwen3 table is out)."""
    every = cases()
    regime = {c.group for c in every if c.triton_moe}
    assert regime == {"sgl-project/sglang#2643", "dstackai/benchmarks"}
    assert sum(c.triton_moe for c in every) == 15
    without_pr = fit(tuple(c for c in every if c.group != "sgl-project/sglang#2643"))
    without_dstack = fit(tuple(c for c in every if c.group != "dstackai/benchmarks"))
    assert (round(without_pr["triton_moe"] * 1e6), round(without_dstack["triton_moe"] * 1e6)) == (510, 390)
    assert fit(tuple(c for c in every if c.group != "QwenLM/Qwen3"))["sglang"] == 1.0
    # with no row of the regime in the fold, the shipped constant stands
    assert fit(tuple(c for c in every if not c.triton_moe))["triton_moe"] == TRITON_MOE_LAYER_S


def test_the_plan_says_when_it_charged_the_cost() -> None:
    fused = "this release's Triton fused MoE adds 0.51 ms per MoE layer (fitted)"
    (old,) = pick_hardware(estimate_inference_memory("deepseek-v3", runtime="sglang", sglang_version="0.4.3"),
                           gpus=["H200"], gpu_count=8)
    assert ("experts tensor-parallel (runtime default): 1/8 of each expert per GPU, its all-reduce per layer; "
            f"{fused}; pass expert_parallel=True (--expert-parallel) for expert parallelism") in old.notes
    (new,) = pick_hardware(estimate_inference_memory("deepseek-v3", runtime="sglang"), gpus=["H200"], gpu_count=8)
    assert not any(fused in n for n in new.notes)

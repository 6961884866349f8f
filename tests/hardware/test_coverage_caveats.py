"""Never silently wrong: an option outside what the speed validation covers says so, in text and --json."""

from __future__ import annotations

import json
import math
from importlib import resources

from holysheep.estimator import estimate_inference_memory, estimate_training_memory
from holysheep.hardware import pick_hardware
from holysheep.hardware._cli import run_plan
from holysheep.hardware._coverage import TRITON_FUSED_MOE, coverage

from .crossval import cases, log_errors

ROWS = json.loads(resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text())["rows"]
VALID = [r for r in ROWS if r.get("validates", True)]


def test_coverage_is_read_from_the_validation_rows() -> None:
    cov = coverage()
    assert set(cov.quants) == {r["runtime"] for r in VALID}
    for rt in cov.batch:
        assert cov.batch[rt] == max(r["batch"] for r in VALID if r["runtime"] == rt)
    assert cov.batch["sglang"] == cov.batch["vllm"] == 128  # DeepSeek-R1 at concurrency 128 (dstack, 2025-03)
    assert cov.moe_multi_gpu == {"sglang": 11, "vllm": 6}  # Qwen3-235B-A22B (2), DeepSeek-V3 (3), DeepSeek-R1 (12)
    assert (cov.moe_experts, cov.moe_experts_triton) == (128, 256)  # 256 only in the Triton fused-MoE releases
    assert cov.moe_missed == ()


def test_rows_marked_as_not_validating_are_exactly_the_missed_moe_rows() -> None:
    """A ``"validates": false`` mark is true of the shipped model: each marked row is beyond ±35 %, and every
    multi-GPU MoE row under a Triton fused-MoE runtime beyond ±35 % is marked, as is every SGLang GPTQ-Int4 MoE
    row (its MoE kernel path, GPTQ-Marlin's, is a separate known miss, docs/estimator.md). The DeepSeek rows
    (SGLang 0.4.1-0.4.3, vLLM 0.7.4), whose Triton fused-MoE term is fitted on them, all count."""
    moe = tuple(c for c in cases() if int(c.row["count"]) > 1 and c.inputs.get("moe_experts")
                and c.row["runtime"] in TRITON_FUSED_MOE)
    errors = [math.exp(e) - 1 for e in log_errors({}, moe)]
    assert [c.row["batch"] for c in moe if c.row["model"] == "DeepSeek-V3"] == [1, 8, 32]
    assert [round(e, 2) for c, e in zip(moe, errors, strict=True) if c.row["model"] == "DeepSeek-V3"] == \
        [-0.14, -0.1, -0.21]
    assert [round(e, 2) for c, e in zip(moe, errors, strict=True) if c.row["model"] == "DeepSeek-R1"] == [
        0.05, 0.0, 0.06, 0.1, 0.17, 0.35, -0.38, -0.29, 0.02, -0.05, 0.04, 0.01]
    for c, e in zip(moe, errors, strict=True):
        if c.triton_moe:  # the fitted term's rows all validate: 14 of 15 within (vLLM 0.7.4 at concurrency 4: -38 %)
            assert c.row.get("validates", True)
            continue
        assert c.row.get("validates", True) == (abs(e) <= 0.35), (c.row["model"], c.row["count"], e)
    assert sum(abs(e) <= 0.35 for c, e in zip(moe, errors, strict=True) if c.triton_moe) == 14
    gptq = tuple(c for c in cases() if c.inputs.get("moe_experts") and c.row["runtime"] == "sglang"
                 and c.row["quant"] == "int4-gptq")
    assert [(c.row["model"], c.row["count"]) for c in gptq] == [("Qwen3-30B-A3B", 1), ("Qwen3-235B-A22B", 4)]
    assert [round(math.exp(e) - 1, 1) for e in log_errors({}, gptq)] == [5.7, 4.9]  # 5x too fast, marked
    assert all(c.row.get("validates") is False for c in gptq)
    assert {(r["model"], r["quant"]) for r in ROWS if not r.get("validates", True)} == {
        ("Qwen3-30B-A3B", "int4-gptq"), ("Qwen3-235B-A22B", "int4-gptq")}


def test_gptq_int4_under_sglang_carries_a_caveat() -> None:
    """SGLang's only GPTQ-Int4 rows (two MoE models) validate nothing: the format is not covered there, and a plan
    in it says so; the many-experts caveat does not name those rows (128 experts are within what is covered)."""
    assert "int4-gptq" not in coverage().quants["sglang"]
    (o,) = pick_hardware(estimate_inference_memory("qwen3-30b-a3b", quant="int4-gptq", runtime="sglang"),
                         gpus=["H20"], gpu_count=1)
    assert o.caveats == ("speed: int4-gptq weights on sglang not checked by a published row",)
    (v,) = pick_hardware(estimate_inference_memory("qwen3-30b-a3b", quant="int4-gptq", runtime="vllm"),
                         gpus=["H20"], gpu_count=1)
    assert not any("int4-gptq" in c for c in v.caveats)


def test_many_experts_across_gpus_under_triton_fused_moe_carry_a_caveat() -> None:
    """256 experts across GPUs are validated only in the releases the rows ran (SGLang 0.4.0-0.4.3, vLLM's V0
    engine), whose Triton fused MoE the model gives its fixed cost per layer; a current release says so."""
    many = ("speed: MoE with 256 experts across 8 GPUs under sglang's Triton fused MoE is outside what the "
            "validation covers (validated up to 128 experts; 256-expert FP8 rows check only SGLang 0.4.0-0.4.3 "
            "(sglang_version=0.4.3 models it))")
    (ds,) = pick_hardware("deepseek-v3", runtime="sglang", gpus=["H200"], gpu_count=8)
    assert ds.caveats == (many,)
    (ep,) = pick_hardware(estimate_inference_memory("deepseek-v3", runtime="sglang", expert_parallel=True),
                          gpus=["H200"], gpu_count=8)
    assert ep.caveats == (many,)
    (v,) = pick_hardware("deepseek-v3", runtime="vllm", gpus=["H200"], gpu_count=8)
    assert v.caveats[-1] == many.replace("under sglang's", "under vllm's").replace(
        "SGLang 0.4.0-0.4.3 (sglang_version=0.4.3", "vLLM's V0 engine, 0.6-0.7 (vllm_version=v0")
    for est in (estimate_inference_memory("deepseek-v3", runtime="sglang", sglang_version="0.4.3.post2"),
                estimate_inference_memory("deepseek-r1", runtime="vllm", vllm_version="v0")):
        (old,) = pick_hardware(est, gpus=["H200"], gpu_count=8)
        assert old.caveats == (), est.runtime  # the releases the DeepSeek rows ran: validated
    # BF16 in an old release is not what the rows ran: the term does not apply, and the caveat stays
    (bf16,) = pick_hardware(estimate_inference_memory("deepseek-v3", "bf16", runtime="sglang",
                                                      sglang_version="0.4.3"), gpus=["H200"], gpu_count=16)
    assert any("256 experts" in c for c in bf16.caveats)
    # 128 experts at TP8 (Qwen3-235B-A22B on 8 H20s, -2 %) and 8 experts are inside; one GPU has no TP experts
    for model, n in (("qwen3-235b-a22b", 8), ("mixtral-8x7b", 2)):
        (o,) = pick_hardware(model, runtime="sglang", gpus=["H200"], gpu_count=n)
        assert o.caveats == (), model
    (cpp,) = pick_hardware("deepseek-v3", quant="q4_0", runtime="llama.cpp", gpus=["H200"], gpu_count=8)
    assert not any("Triton fused MoE" in c for c in cpp.caveats)


def test_a_covered_option_has_no_caveat() -> None:
    (o,) = pick_hardware("llama-3.1-8b", quant="bf16", gpus=["A100 80GB"], gpu_count=1)
    assert o.caveats == ()


def test_regime_runtime_and_architecture_outside_the_rows_are_named() -> None:
    (o,) = pick_hardware("llama-3.1-8b", quant="bf16", runtime="vllm", batch=256, gpus=["B200"], gpu_count=1)
    assert o.caveats == ("speed: no published vllm row on a blackwell GPU",
                         "speed: batch 256 above the largest published vllm batch (128)")
    (m,) = pick_hardware("llama-3.1-8b", quant="bf16", runtime="mlx", gpus=["M4 Max"])
    assert m.caveats == ("speed: no published row for runtime mlx",)
    (moe,) = pick_hardware("mixtral-8x7b", runtime="default", gpus=["A100 80GB"], gpu_count=2)
    assert "speed: MoE across GPUs on default not checked by a published row" in moe.caveats
    (cpp,) = pick_hardware("llama-3.1-8b", quant="q4_0", runtime="llama.cpp", gpus=["B200"], gpu_count=1)
    assert "speed: no published llama.cpp row on a blackwell GPU" in cpp.caveats
    train = estimate_training_memory("llama-3.1-8b", method="lora", num_gpus=1)
    (t,) = pick_hardware(train, gpus=["H100"], gpu_count=1)
    assert t.caveats and t.caveats[0].startswith("training speed: no published row")


def test_many_experts_caveat_shows_in_text_and_json() -> None:
    text, data = run_plan("deepseek-v3", runtime="sglang", gpus=["H200"], gpu_count=8)
    line = ("8x H200 SXM 141GB: not validated: MoE with 256 experts across 8 GPUs under sglang's Triton fused MoE "
            "is outside what the validation covers")
    assert line in text
    assert data["options"][0]["caveats"] == [next(c for c in coverage_caveats(data))]


def coverage_caveats(data: dict[str, object]) -> list[str]:
    opts = data["options"]
    assert isinstance(opts, list)
    return [c for c in opts[0]["caveats"] if "Triton fused MoE" in c]


def test_caveats_show_in_text_and_json() -> None:
    text, data = run_plan("llama-3.1-8b", runtime="vllm", batch=256, gpus=["B200"], gpu_count=1)
    assert ("1x B200 (HGX) 180GB: not validated: no published vllm row on a blackwell GPU; batch 256 above the "
            "largest published vllm batch (128)") in text
    assert data["options"][0]["caveats"] == ["speed: no published vllm row on a blackwell GPU",
                                             "speed: batch 256 above the largest published vllm batch (128)"]
    est = estimate_inference_memory("llama-3.1-8b", runtime="vllm")
    assert est.runtime == "vllm"

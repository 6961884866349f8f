"""Never silently wrong: an option outside what the speed validation covers says so, in text and --json."""

from __future__ import annotations

import json
from importlib import resources

from holysheep.estimator import estimate_inference_memory, estimate_training_memory
from holysheep.hardware import pick_hardware
from holysheep.hardware._cli import run_plan
from holysheep.hardware._coverage import coverage

ROWS = json.loads(resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text())["rows"]


def test_coverage_is_read_from_the_validation_rows() -> None:
    cov = coverage()
    assert set(cov.quants) == {r["runtime"] for r in ROWS}
    for rt in cov.batch:
        assert cov.batch[rt] == max(r["batch"] for r in ROWS if r["runtime"] == rt)
    assert cov.moe_multi_gpu == {"sglang": 6}  # DeepSeek-V3 and Qwen3-235B-A22B: the only MoE rows on several GPUs


def test_a_covered_option_has_no_caveat() -> None:
    (o,) = pick_hardware("llama-3.1-8b", quant="bf16", gpus=["A100 80GB"], gpu_count=1)
    assert o.caveats == ()


def test_regime_runtime_and_architecture_outside_the_rows_are_named() -> None:
    (o,) = pick_hardware("llama-3.1-8b", quant="bf16", runtime="vllm", batch=64, gpus=["B200"], gpu_count=1)
    assert o.caveats == ("speed: no published vllm row on a blackwell GPU",
                         "speed: batch 64 above the largest published vllm batch (32)")
    (m,) = pick_hardware("llama-3.1-8b", quant="bf16", runtime="mlx", gpus=["M4 Max"])
    assert m.caveats == ("speed: no published row for runtime mlx",)
    (moe,) = pick_hardware("mixtral-8x7b", runtime="vllm", gpus=["A100 80GB"], gpu_count=2)
    assert "speed: MoE across GPUs on vllm not checked by a published row" in moe.caveats
    (cpp,) = pick_hardware("llama-3.1-8b", quant="q4_0", runtime="llama.cpp", gpus=["B200"], gpu_count=1)
    assert "speed: no published llama.cpp row on a blackwell GPU" in cpp.caveats
    train = estimate_training_memory("llama-3.1-8b", method="lora", num_gpus=1)
    (t,) = pick_hardware(train, gpus=["H100"], gpu_count=1)
    assert t.caveats and t.caveats[0].startswith("training speed: no published row")


def test_caveats_show_in_text_and_json() -> None:
    text, data = run_plan("llama-3.1-8b", runtime="vllm", batch=64, gpus=["B200"], gpu_count=1)
    assert ("1x B200 (HGX) 180GB: not validated: no published vllm row on a blackwell GPU; batch 64 above the "
            "largest published vllm batch (32)") in text
    assert data["options"][0]["caveats"] == ["speed: no published vllm row on a blackwell GPU",
                                             "speed: batch 64 above the largest published vllm batch (32)"]
    est = estimate_inference_memory("llama-3.1-8b", runtime="vllm")
    assert est.runtime == "vllm"

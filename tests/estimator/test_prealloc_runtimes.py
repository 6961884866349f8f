"""TensorRT-LLM (and NIM) and LMDeploy TurboMind: the KV pool is a fixed share of the memory left after
weights, the forward pass and the CUDA context (``_prealloc``); what they cannot plan is refused."""

from __future__ import annotations

import json

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_inference_memory
from holysheep.estimator._prealloc import PREALLOC_FRACTION, PREALLOC_TOKENS
from holysheep.hardware import pick_hardware


def test_defaults_are_the_runtimes_own() -> None:
    # free_gpu_memory_fraction, cache_max_entry_count
    assert PREALLOC_FRACTION == {"tensorrt-llm": 0.9, "lmdeploy": 0.8}
    assert PREALLOC_TOKENS == {"tensorrt-llm": 8192, "lmdeploy": 8192}
    for alias, rt in (("nim", "tensorrt-llm"), ("TRT-LLM", "tensorrt-llm"), ("turbomind", "lmdeploy")):
        assert estimate_inference_memory("llama-3.1-8b", "bf16", runtime=alias).runtime == rt


def test_the_kv_pool_is_a_share_of_what_is_left() -> None:
    est = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, 16, runtime="tensorrt-llm")
    b = est.breakdown
    assert round(b["weights"], 6) == 16.060522 and round(b["kv_cache"], 6) == 17.179869  # 16 x 8,192 x 128 KiB
    fixed = b["weights"] + b["activations"] + b["overhead"]
    h100 = est.memory_check("H100")  # 85.9 GB device memory
    assert h100.fits and h100.limit_gb == 85.9
    assert h100.need_gb == pytest.approx(fixed + b["kv_cache"] / 0.9)
    assert "KV pool free_gpu_memory_fraction 0.9 of the memory left (61.6 GB for 17.2 GB of KV)" in h100.rule
    l4 = est.memory_check("L4")  # (24.0 - 17.48) x 0.9 = 5.9 GB < 17.2 GB
    assert not l4.fits and "(5.9 GB for 17.2 GB of KV)" in l4.rule


def test_lmdeploy_keeps_a_fifth_free_and_the_fraction_is_an_input() -> None:
    est = estimate_inference_memory("llama-2-7b", "bf16", 4096, 64, runtime="lmdeploy")  # 137.4 GB of KV
    assert [est.memory_check("H100", n).fits for n in (1, 2, 4)] == [False, False, True]
    assert "(62.5 GB for 68.7 GB of KV)" in est.memory_check("H100", 2).rule  # 0.8 x 78.2 GB
    wider = estimate_inference_memory("llama-2-7b", "bf16", 4096, 64, runtime="lmdeploy", gpu_memory_utilization=0.9)
    assert wider.memory_check("H100", 2).fits  # 0.9 x 78.2 = 70.4 GB >= 68.7 GB
    assert "cache_max_entry_count 0.9" in wider.memory_check("H100", 2).rule


@pytest.mark.parametrize("quant", ["q4_k_m", "q8_0", "nf4", "bnb-4bit"])
@pytest.mark.parametrize("runtime", ["tensorrt-llm", "lmdeploy"])
def test_formats_of_other_stacks_are_refused(quant: str, runtime: str) -> None:
    with pytest.raises(InvalidRequestError) as e:
        estimate_inference_memory("llama-3.1-8b", quant, runtime=runtime)
    assert e.value.field == "quant" and "does not load" in str(e.value)


def test_the_picker_rejects_other_vendors_and_says_when_the_speed_is_unvalidated() -> None:
    res = pick_hardware("llama-3.1-8b", quant="fp8", runtime="tensorrt-llm", gpus=["H100", "MI300X"], gpu_count=1)
    (h100,) = res
    (amd,) = res.rejected
    assert (amd.reason_code, amd.reason) == ("runtime_limit",
                                            "TensorRT-LLM runs on NVIDIA GPUs only, not on Instinct MI300X 192GB")
    assert h100.caveats == ()  # TensorRT-LLM 0.5.0's FP8 rows on H100s check it (docs/hardware.md)
    assert h100.decode_interval is not None and h100.decode_tokens_per_s is not None
    low, high = h100.decode_interval  # 6 rows from one publication: the pooled 90 % range
    assert round(high / low, 3) == 2.25
    (lm,) = pick_hardware("llama-3.1-8b", quant="fp8", runtime="lmdeploy", gpus=["H100"], gpu_count=1)
    # LMDeploy's published rows are FP16 on A100s: FP8 on a Hopper GPU is outside them
    assert lm.caveats == ("speed: fp8 weights on lmdeploy not checked by a published row",
                          "speed: no published lmdeploy row on a hopper GPU")


def test_lmdeploy_plan_matches_its_published_table() -> None:
    """LMDeploy v0.1.0a1's 'Benchmark on A100 (FP16)', llama2-7b, batch 16, input 128, output 2,048: 1,010.62
    out tok/s (decode_benchmarks.json); the plan is within the ±35 % the validation states, and validated."""
    est = estimate_inference_memory("llama-2-7b", "bf16", 128 + 2048 // 2, 16, runtime="lmdeploy")
    (a100,) = pick_hardware(est, gpus=["a100-80-sxm"], gpu_count=1)
    assert a100.decode_tokens_per_s is not None and a100.decode_interval is not None
    assert round(a100.decode_tokens_per_s, 1) == 998.2  # -1.2 % of 1,010.62
    assert abs(a100.decode_tokens_per_s / 1010.62 - 1) <= 0.35
    low, high = a100.decode_interval
    assert low < 1010.62 < high and a100.caveats == ()


def test_cli_runtime_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main

    assert main(["plan", "llama-3.1-8b", "--runtime", "lmdeploy", "--gpus", "H100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runtime"] == "lmdeploy"
    assert data["options"][0]["caveats"] == ["speed: no published lmdeploy row on a hopper GPU"]  # BF16: checked
    assert len(data["options"][0]["decode_tokens_per_s_interval"]) == 2
    assert main(["plan", "llama-3.1-8b", "--runtime", "tensorrt-llm", "--quant", "q4_0"]) == 2
    assert "TensorRT-LLM does not load GGUF weights (q4_0)" in capsys.readouterr().err

"""Runtime memory rules: each applied once, and fits() / pick_hardware agree over a grid."""

from __future__ import annotations

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.estimator import estimate_inference_memory, quant_spec, weight_bytes
from holysheep.estimator._architecture import Architecture
from holysheep.estimator._catalog import get_architecture
from holysheep.hardware import gpu, pick_hardware


def test_70b_awq_8k_fits_one_48gb_gpu() -> None:
    default = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192)
    assert default.per_gpu_gb == pytest.approx(44.70, abs=0.01)
    assert default.fits("L40S")
    (opt,) = pick_hardware(default, gpus=["L40S"])
    # no 0.9 on top of counted overheads; an L40S reports 46,068 MiB (ECC on) = 48.31 GB
    assert opt.count == 1 and opt.usable_gb_per_gpu == pytest.approx(48.31 * 0.95)  # less the 5 % reserve
    # vLLM at its default 0.9 of CUDA's total (44.53 GiB = 47.81 GB on an L40S) is 0.80 GB short; at 0.95
    # (what 48 GB users pass) it fits, in every API
    cuda_total = 44.53 * 2**30 / 1e9
    vllm = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192, runtime="vllm")
    check = vllm.memory_check("L40S")
    assert not check.fits and check.limit_gb == pytest.approx(0.9 * cuda_total) and check.warnings == ()
    assert check.need_gb == pytest.approx(43.83, abs=0.01)
    tuned = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192, runtime="vllm", gpu_memory_utilization=0.95)
    assert tuned.fits("L40S")
    (opt,) = pick_hardware(tuned, gpus=["L40S"], max_gpus=1)
    assert opt.count == 1 and opt.usable_gb_per_gpu == pytest.approx(0.95 * cuda_total)
    by_name = pick_hardware("llama-3.1-70b", quant="awq", context=8192, runtime="vllm",
                            gpu_memory_utilization=0.95, gpus=["L40S"], max_gpus=1)
    assert [o.count for o in by_name] == [1]


def test_vllm_profile_tokens_follow_gpu_memory() -> None:
    est = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="vllm")
    assert est.prefill_chunk == 8192  # unknown GPU: the large-GPU default
    assert est.memory_check("L40S").fits
    small = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="vllm", gpu_memory_gb=48.0)
    big = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="vllm", gpu_memory_gb=80.0)
    assert (small.prefill_chunk, big.prefill_chunk) == (2048, 8192)
    fixed = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="vllm", max_num_batched_tokens=512)
    assert fixed.prefill_chunk == 512
    # V0 without chunked prefill profiles the whole max_model_len
    v0 = estimate_inference_memory("llama-3.1-8b", "bf16", 32768, runtime="vllm", vllm_version="v0")
    assert v0.prefill_chunk == 32768 and v0.breakdown["activations"] > 3 * big.breakdown["activations"]


def test_llama_cpp_70b_q4_k_m_8k_fits_two_rtx_4090() -> None:
    est = estimate_inference_memory("llama-3.1-70b", "q4_k_m", 8192, runtime="llama.cpp")
    assert not est.fits("RTX 4090") and est.fits("RTX 4090", 2)
    two = est.with_tensor_parallel(2)
    arch = get_architecture("llama-3.1-70b")
    g = arch.param_groups()
    spec = quant_spec("q4_k_m")
    body = weight_bytes(arch, spec) - round(g["embedding"] * spec.embedding_bits / 8) * 2
    # last GPU: 40 layers + output matrix; token embeddings stay in host memory
    assert two.breakdown["weights"] * 1e9 == pytest.approx(body / 2 + g["lm_head"] * spec.embedding_bits / 8, rel=1e-6)
    assert two.breakdown["kv_cache"] == pytest.approx(40 * 8192 * 2 * 8 * 128 * 2 / 1e9)
    assert two.per_gpu_gb == pytest.approx(23.73, abs=0.01)
    opts = pick_hardware(est, gpus=["RTX 4090"], max_gpus=2)
    assert [o.count for o in opts] == [2]
    assert opts[0].usable_gb_per_gpu == pytest.approx(25.77 * 0.95)  # 24 GiB less 5 %


def test_llama_cpp_compute_buffer_matches_logged_sizes() -> None:
    fa = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="llama.cpp")
    eager = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="llama.cpp", flash_attention=False)
    mib = 1e9 / 2**20
    assert fa.breakdown["activations"] * mib == pytest.approx(258.5, rel=0.05)  # logged with -fa
    assert eager.breakdown["activations"] * mib == pytest.approx(560, rel=0.10)  # logged without


def test_llama_cpp_and_hf_split_layers_so_heads_do_not_limit_gpu_count() -> None:
    est = estimate_inference_memory("llama-3.1-70b", "q4_k_m", 8192, runtime="llama.cpp")
    three = est.with_tensor_parallel(3)
    assert three.warnings == [] and three.fits("RTX 4090", 3)
    opts = pick_hardware(est, gpus=["RTX 4090"], max_gpus=4)
    assert opts[0].reason is None


def test_hf_caches_mla_uncompressed_71x() -> None:
    ds = get_architecture("deepseek-v3")
    hf = estimate_inference_memory(ds, "fp8", 4096, runtime="hf")
    vllm = estimate_inference_memory(ds, "fp8", 4096, runtime="vllm")
    ratio = hf.breakdown["kv_cache"] / vllm.breakdown["kv_cache"]
    assert ratio == pytest.approx(128 * (128 + 64 + 128) / 576, rel=0.001) and round(ratio, 1) == 71.1
    assert any("uncompressed" in a for a in hf.assumptions)


def test_hf_eager_attention_counts_the_scores() -> None:
    fa = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="hf")
    eager = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="hf", flash_attention=False)
    scores = 32 * 8192 * 8192 * (2 + 2 + 4)
    assert (eager.breakdown["activations"] - fa.breakdown["activations"]) * 1e9 == pytest.approx(scores, rel=1e-6)
    assert fa.prefill_chunk == 8192  # whole prompt, no chunking


def test_sglang_static_fraction_by_tp() -> None:
    est = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, batch=8, runtime="sglang")
    check = est.memory_check("L40S")
    assert check.limit_gb == pytest.approx(44.53 * 2**30 / 1e9 * 0.88)  # CUDA's total on an L40S
    b = est.breakdown
    assert check.need_gb == pytest.approx(b["weights"] + b["kv_cache"] + b["overhead"])
    # an H100 SXM: SGLang's fraction of CUDA's total, 79.11 GiB (not the driver's 85.9 GB)
    assert est.with_tensor_parallel(8).memory_check("H100").limit_gb == pytest.approx(79.11 * 2**30 / 1e9 * 0.81)


def test_bnb_default_4bit_is_fp4_at_4_5_bits() -> None:
    spec = quant_spec("load_in_4bit")
    assert spec.name == "bnb-4bit" and spec.bits_per_weight == 4.5 and spec.weight_dtype == "fp4"
    assert quant_spec("nf4").bits_per_weight < 4.13


def test_unknown_runtime_is_a_clear_error() -> None:
    with pytest.raises(InvalidRequestError) as info:
        estimate_inference_memory("llama-3.1-8b", runtime="tgi")
    assert info.value.field == "runtime" and "llama.cpp" in str(info.value)


def test_mlx_is_one_apple_machine() -> None:
    est = estimate_inference_memory("llama-3.1-8b", "bf16", 8192, runtime="mlx")
    assert est.breakdown["overhead"] == 0.0 and est.prefill_chunk == 2048
    res = pick_hardware(est, gpus=["H100"])
    assert list(res) == [] and res.rejected[0].reason_code == "runtime_limit"


GRID_GPUS = ["L4", "RTX 4090", "L40S", "A100 80GB", "H100", "H200"]


@pytest.mark.parametrize("runtime", ["default", "vllm", "sglang", "hf", "llama.cpp"])
@pytest.mark.parametrize(("model", "quant"), [("llama-3.1-8b", "bf16"), ("llama-3.1-70b", "int4-awq"),
                                              ("qwen2.5-32b", "fp8"), ("mixtral-8x7b", "int4-gptq")])
@pytest.mark.parametrize("context", [4096, 32768])
def test_fits_and_pick_hardware_agree_over_a_grid(runtime: str, model: str, quant: str, context: int) -> None:
    q = "q4_k_m" if runtime == "llama.cpp" and quant != "bf16" else quant
    est = estimate_inference_memory(model, q, context, batch=2, runtime=runtime)
    res = pick_hardware(est, gpus=GRID_GPUS, max_gpus=8, objective="cost")
    arch: Architecture = est.architecture
    split = runtime in ("hf", "llama.cpp")
    for name in GRID_GPUS:
        opt = next((o for o in list(res) + res.rejected if o.gpu.id == gpu(name).id), None)
        if opt is None or opt.reason_code == "no_native_precision":
            continue
        counts = [c for c in (1, 2, 4, 8)
                  if split or (arch.num_attention_heads % c == 0 and arch.num_key_value_heads % c == 0)]
        fitting = [c for c in counts if est.memory_check(name, c).fits]
        if opt.reason is None:
            assert opt.count in fitting, (name, opt.count, fitting)
            assert est.memory_check(name, opt.count).fits
        elif opt.reason_code == "does_not_fit":
            assert fitting == [], (name, fitting)


def test_transformers_before_4_45_builds_logits_for_the_whole_prompt() -> None:
    """Qwen2.5-7B at 6,144 tokens: 6,144 x 152,064 x 6 B = 5.606 GB more than the last position's fp32 row."""
    new = estimate_inference_memory("qwen2.5-7b", "bf16", 6144, runtime="hf")
    old = estimate_inference_memory("qwen2.5-7b", "bf16", 6144, runtime="hf", transformers_version="4.44.2")
    assert estimate_inference_memory("qwen2.5-7b", "bf16", 6144, runtime="hf",
                                     transformers_version="4.45.0").total_gb == new.total_gb
    extra = (6144 * 152064 * 6 - 152064 * 4) / 1e9
    assert old.breakdown["activations"] - new.breakdown["activations"] == pytest.approx(extra, abs=1e-6)
    assert any("before 4.45" in n for n in old.assumptions)
    with pytest.raises(InvalidRequestError, match="applies to runtime='hf'"):
        estimate_inference_memory("qwen2.5-7b", runtime="vllm", transformers_version="4.44")
    with pytest.raises(InvalidRequestError, match=r"must look like 4\.44"):
        estimate_inference_memory("qwen2.5-7b", runtime="hf", transformers_version="four")

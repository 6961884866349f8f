"""Inference estimates: the blog's examples, vLLM block counts, tensor parallelism, errors, rendering."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from holysheep import InvalidRequestError, UnknownGPUError, UnknownModelError
from holysheep.estimator import estimate_inference_memory, get_architecture, quant_spec

A100_80GB = 79.15 * 2**30 / 1e9  # what CUDA reports for an A100-SXM4-80GB (79.15 GiB)


def test_blog_70b_int4_8k_batch4_is_about_a_third_of_the_blog() -> None:
    est = estimate_inference_memory("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    assert est.breakdown["kv_cache"] == pytest.approx(10.737418240)  # 320 KiB x 32,768 tokens
    assert est.breakdown["weights"] == pytest.approx(39.77, abs=0.01)
    # Llama-2/3-70B config.json: KV 320 KiB/token; AWQ g128 weights 36.6-39.8 GB: ≈47–51 GB plus 1–5 GB
    assert 47 <= est.total_gb <= 56
    assert est.total_gb < 143.5 / 2.5  # the blog printed 143.5 GB
    assert est.per_gpu_gb == est.total_gb and est.total_gib == pytest.approx(est.total_gb / 1.073741824)
    fp8 = estimate_inference_memory("llama-3.1-70b", "int4-awq", 8192, 4, kv_dtype="fp8")
    assert fp8.breakdown["kv_cache"] == pytest.approx(est.breakdown["kv_cache"] / 2)


def test_blog_positional_calls_warn_and_record_the_assumption() -> None:
    with pytest.warns(UserWarning, match="approximate"):
        est = estimate_inference_memory(7, "fp16", 2048, 1)
    assert est.architecture.name == "Llama-2-7B"
    assert any("Llama-2-7B" in a for a in est.assumptions)
    # weights 13.48 GB + KV 1.07 GB = 14.55 GB, plus runtime overhead (blog: 15.75 GB)
    assert est.breakdown["weights"] + est.breakdown["kv_cache"] == pytest.approx(14.55, abs=0.01)
    assert 14.55 < est.total_gb < 15.75
    with pytest.warns(UserWarning):
        odd = estimate_inference_memory(13, "fp16")
    assert abs(odd.architecture.num_params / 13e9 - 1) < 0.03 and "llama-like" in odd.model_name


def test_kv_and_weight_fields() -> None:
    est = estimate_inference_memory("Llama-2-7B", "fp16", 4096, 2)
    assert est.weights_bytes_total == 13_476_831_232
    assert est.kv_cache_bytes_per_token == 524_288
    assert est.quant_spec is quant_spec("fp16") and est.quant == "fp16" and est.kv_dtype == "fp16"
    assert (est.context, est.batch, est.tensor_parallel) == (4096, 2, 1)
    assert est.architecture is get_architecture("Llama-2-7B")
    assert set(est.breakdown) == {"weights", "kv_cache", "activations", "overhead"}


def test_tensor_parallel_shards_per_gpu() -> None:
    one = estimate_inference_memory("Llama-3.1-70B", "bf16", 8192, 1)
    four = one.with_tensor_parallel(4)
    assert four.tensor_parallel == 4 and four.context == 8192
    assert four.breakdown["weights"] == pytest.approx(one.breakdown["weights"] / 4, rel=1e-9)
    assert four.breakdown["kv_cache"] == pytest.approx(one.breakdown["kv_cache"] / 4)
    assert four.total_gb == pytest.approx(four.per_gpu_gb * 4)
    ds = estimate_inference_memory("DeepSeek-V3", "fp8", 4096, 1, tensor_parallel=8)
    assert ds.breakdown["kv_cache"] == pytest.approx(70_272 * 4096 / 1e9)  # MLA cache not sharded
    assert any("replicated" in a for a in ds.assumptions)
    bad = estimate_inference_memory("Llama-3.1-8B", "bf16", 1024, 1, tensor_parallel=3)
    assert any("do not divide" in w for w in bad.warnings)


def test_fits_with_numbers_objects_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    est = estimate_inference_memory("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    assert est.fits(80) and not est.fits(48)
    assert est.fits(types.SimpleNamespace(memory_gb=80.0))
    bf16 = estimate_inference_memory("llama-3.1-70b", "bf16", 8192, 4)
    # 77.5 GB per GPU at TP2: an 80 GiB card (85.9 GB less its 5 % reserve) holds it, 80 GB does not
    assert not bf16.fits(80, count=2) and bf16.fits(85.9, count=2)
    # names come from the accelerator table, which the estimator reads without importing hardware
    assert est.fits("A100-80GB") and not est.fits("RTX 4090")
    with pytest.raises(UnknownGPUError, match="Unknown GPU"):
        est.fits("A100-81GB-nonsense")
    with pytest.raises(InvalidRequestError, match="memory_gb"):
        est.fits(types.SimpleNamespace(name="no memory"))


def _blocks(version: str) -> tuple[int, int]:
    r1 = estimate_inference_memory(
        "Llama-2-7B", "fp16", 4096, 1, runtime="vllm", gpu_memory_gb=A100_80GB, vllm_version=version).vllm
    r2 = estimate_inference_memory("Llama-2-70B", "fp16", 4096, 1, tensor_parallel=4, runtime="vllm",
                                   gpu_memory_gb=A100_80GB, vllm_version=version).vllm
    assert r1 is not None and r2 is not None
    return r1.num_gpu_blocks, r2.num_gpu_blocks


def test_vllm_pytorch_side_predicts_the_pre_fix_counts() -> None:
    # PR #2031's "current main" counted PyTorch memory only: 7,449 (TP1) and 31,615 (TP4) blocks. Nothing in
    # this profile comes from those numbers: weights, KV geometry and the profiling pass are the estimator's.
    b1, b2 = _blocks("0.2.5-pre")
    assert abs(b1 / 7449 - 1) < 0.01 and abs(b2 / 31615 - 1) < 0.01


def test_vllm_block_counts_reproduce_pr_2031() -> None:
    # vllm PR #2031: 7,351 and 20,865 blocks. The PyTorch side is predicted (previous test); the
    # non-PyTorch memory is the size PR #2031 itself measured (the drop in blocks when it began to count).
    b1, b2 = _blocks("0.2.5")
    assert abs(b1 / 7351 - 1) < 0.02 and abs(b2 / 20865 - 1) < 0.02


def test_vllm_block_geometry_matches_pr_2031() -> None:
    r1 = estimate_inference_memory(
        "Llama-2-7B", "fp16", 4096, 1, runtime="vllm", gpu_memory_gb=A100_80GB, vllm_version="0.2.5"
    ).vllm
    r2 = estimate_inference_memory(
        "Llama-2-70B", "fp16", 4096, 1, tensor_parallel=4, runtime="vllm", gpu_memory_gb=A100_80GB, vllm_version="0.2.5"
    ).vllm
    assert r1 is not None and r2 is not None
    assert r1.block_bytes == 16 * 524_288 and r2.block_bytes == 16 * 81_920
    assert r1.kv_cache_tokens == r1.num_gpu_blocks * 16


def test_vllm_v1_profile_row1_and_the_documented_row2_gap() -> None:
    # v1's buffers are not fitted to PR #2031, so row 1 is an independent check
    v1 = estimate_inference_memory("Llama-2-7B", "fp16", 4096, 1, runtime="vllm", gpu_memory_gb=A100_80GB).vllm
    assert v1 is not None and abs(v1.num_gpu_blocks / 7351 - 1) < 0.02
    assert v1.fits and v1.max_concurrency == v1.num_gpu_blocks / 256  # 256 blocks per 4096-token request
    # vLLM 0.2.5 counted ~13 GiB/GPU of non-PyTorch memory at TP4; without it the pool is ~47% larger
    v2 = estimate_inference_memory(
        "Llama-2-70B", "fp16", 4096, 1, tensor_parallel=4, runtime="vllm", gpu_memory_gb=A100_80GB
    ).vllm
    assert v2 is not None and 1.40 < v2.num_gpu_blocks / 20865 < 1.55


def test_vllm_profiles_share_their_memory_values() -> None:
    """Each profile differs from the one it derives from only in what that release changed."""
    from dataclasses import replace

    from holysheep.estimator import VLLM_PROFILES as P

    def same(a: str, b: str, **changed: object) -> bool:
        return replace(P[a], name=b, description=P[b].description, source=P[b].source, **changed) == P[b]

    # 0.4.1-0.5.2: the V0 profiler, older kernels (and no DeepSeek-class MoE to run through Triton)
    assert same("v0", "0.4", awq_marlin=False, flash_decode=False, triton_moe=False)
    assert same("v1", "0.8", async_scheduling=False)  # V1 before async scheduling became the default (0.14)
    assert same("0.2.5-pre", "0.2.5", non_torch_bytes=(7449 - 7351) * 16 * 524_288,
                non_torch_bytes_tp=(31615 - 20865) * 16 * 81_920)
    assert [n for n, p in P.items() if p.async_scheduling] == ["v1"]


def test_vllm_fits_uses_the_pool() -> None:
    est = estimate_inference_memory("Llama-3.1-8B", "bf16", 131072, 8, runtime="vllm")
    assert est.vllm is None and any("gpu_memory_gb" in a for a in est.assumptions)
    assert not est.fits(80)  # 8 x 128k x 128 KiB = 137 GB of KV
    assert est.fits(80, count=4)  # 2 KV heads per GPU: 34 GB of KV each
    assert estimate_inference_memory("Llama-3.1-8B", "bf16", 8192, 8, runtime="vllm").fits(80)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"context": -1}, "context"),
        ({"batch": 0}, "batch"),
        ({"quant": "int3"}, "quant"),
        ({"tensor_parallel": 0}, "tensor_parallel"),
        ({"runtime": "tgi"}, "runtime"),
        ({"kv_dtype": "int2"}, "kv_dtype"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"vllm_version": "0.1"}, "vllm_version"),
        ({"context": 2.5}, "context"),
    ],
)
def test_bad_arguments_raise_with_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidRequestError) as exc:
        estimate_inference_memory("Llama-3.1-8B", **kwargs)  # type: ignore[arg-type]
    assert exc.value.field == field and str(exc.value)


def test_unknown_and_closed_models() -> None:
    with pytest.raises(UnknownModelError, match=r"Llama-3\.1-8B"):
        estimate_inference_memory("llama-3.1-8", "bf16")
    with pytest.raises(UnknownModelError, match="closed model"):
        estimate_inference_memory("gpt-4.1")
    with pytest.raises(InvalidRequestError):
        estimate_inference_memory(-7)


def test_served_alias_maps_to_open_architecture() -> None:
    est = estimate_inference_memory("deepseek-chat", "fp8", 8192, 1, tensor_parallel=8)
    assert est.model_name == "DeepSeek-V3" and any("served name" in a for a in est.assumptions)
    assert any("fp8" in a for a in est.assumptions)
    v32 = estimate_inference_memory("deepseek-v3.2", "fp8", 8192, 1, tensor_parallel=8)
    assert v32.model_name == "DeepSeek-V3.2-Exp" and v32.warnings == []  # its own row: the indexer is counted


def test_rendering() -> None:
    est = estimate_inference_memory("Qwen2.5-7B", "int4-gptq", 32768, 2, tensor_parallel=2)
    text = str(est)
    assert "kv_cache" in text and "total per GPU" in text and "x 2 GPUs" in text
    page = est._repr_html_()
    assert page.count("<tr>") == 7 and "width:" in page and "Qwen2.5-7B" in page


def test_import_holysheep_does_not_load_the_estimator() -> None:
    code = (
        "import sys, holysheep; assert 'holysheep.estimator' not in sys.modules; before = set(sys.modules); "
        "import holysheep.estimator; print(sorted({'httpx', 'pydantic'} & (set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

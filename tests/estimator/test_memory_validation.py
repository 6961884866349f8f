"""Issue 47, point 4: MLX's prefill peak, vLLM's profile peak of an FP8 MoE, GGUF tensor types per tensor, and
the memory validation over published rows (tests/estimator/memory_rows.py, docs/estimator.md)."""

from __future__ import annotations

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_inference_memory, get_architecture
from holysheep.estimator._catalog import catalog_entry
from holysheep.estimator._quant import quant_spec, weight_bytes
from holysheep.estimator._vllm import fp8_moe_profile_bytes, vllm_profile

from .memory_rows import GIB, H100_80GB, ROWS, score

pytestmark = pytest.mark.filterwarnings("error")


def test_gguf_mxfp4_is_typed_per_tensor_as_the_converter_writes_it() -> None:
    """ggml-org/gpt-oss-20b-GGUF: 72 MXFP4 expert tensors, 98 Q8_0 (attention, embeddings, output), 289 F32;
    llama.cpp prints "file size = 11.27 GiB". One type for the file (MXFP4 experts, the rest bf16) gave 12.82."""
    arch = get_architecture("gpt-oss-20b")
    experts, attention = 19_110_297_600, 637_009_920
    embeddings, other = 2 * 579_133_440, 9_182_784  # token_embd + output; norms, biases, router, sinks
    expected = experts * 17 // 32 + (attention + embeddings) * 34 // 32 + other * 4
    assert weight_bytes(arch, quant_spec("gguf-mxfp4")) == expected == 12_096_558_336
    assert round(expected / GIB, 2) == 11.27
    assert round(weight_bytes(arch, quant_spec("mxfp4")) / GIB, 2) == 12.82  # the checkpoint: bf16 outside experts
    est = estimate_inference_memory("gpt-oss-20b", context=4096, runtime="llama.cpp")
    assert est.quant == "gguf-mxfp4" and est.weights_bytes_total == expected
    assert any("Q8_0 attention" in n for n in est.assumptions)
    assert estimate_inference_memory("gpt-oss-20b", context=4096).quant == "mxfp4"  # vLLM & co. load the checkpoint
    with pytest.raises(InvalidRequestError, match="does not load GGUF"):
        estimate_inference_memory("gpt-oss-20b", "gguf-mxfp4", runtime="tensorrt-llm")


def test_a_gguf_type_keeps_the_checkpoints_mxfp4_experts() -> None:
    """Every gpt-oss GGUF keeps its 72 expert tensors in MXFP4 (hermes-agent#116681); unsloth's Q4_K_M logs
    10.81 GiB. The file's type applies to the other matrices; other models keep one type per file."""
    arch = get_architecture("gpt-oss-20b")
    q4 = estimate_inference_memory("gpt-oss-20b", "q4_k_m", 4096, runtime="llama.cpp")
    assert q4.quant == "q4_k_m+mxfp4" and any("keeps the checkpoint's MXFP4 experts" in n for n in q4.assumptions)
    attention_and_embeddings = 637_009_920 + 2 * 579_133_440
    assert q4.weights_bytes_total == round((19_110_297_600 * 4.25 + attention_and_embeddings * 4.8944
                                            + 9_182_784 * 32) / 8)
    assert round(q4.weights_bytes_total / GIB, 2) == 10.51  # 10.81 published (its mix: q4_K, q5_0, q8_0): -2.8 %
    q8 = estimate_inference_memory("gpt-oss-20b", "q8_0", 4096, runtime="llama.cpp")
    assert q8.weights_bytes_total == weight_bytes(arch, quant_spec("gguf-mxfp4"))  # the ggml-org file's layout
    assert estimate_inference_memory("llama-3.1-8b", "q4_k_m", runtime="llama.cpp").quant == "q4_k_m"
    config = {**catalog_entry("gpt-oss-20b").config, "quantization_config": {"quant_method": "mxfp4"}}
    assert estimate_inference_memory(config, "q4_k_m", 4096, runtime="llama.cpp").quant == "q4_k_m+mxfp4"
    with pytest.raises(InvalidRequestError, match="does not load GGUF"):
        estimate_inference_memory("gpt-oss-20b", "q4_k_m", runtime="lmdeploy")


def test_vllm_profile_peak_of_an_fp8_moe() -> None:
    """vllm#21348: Qwen3-235B-A22B-FP8, TP4 on H100, logs 8.11 GiB of KV per GPU (178,880 tokens); without the
    MoE profile peak the pool was 14.50 GiB (+79 %)."""
    est = estimate_inference_memory("qwen3-235b-a22b", "fp8", 40960, tensor_parallel=4, runtime="vllm",
                                    vllm_version="0.8", gpu_memory_gb=H100_80GB)
    v = est.vllm
    assert v is not None
    assert (v.num_gpu_blocks, v.kv_cache_tokens) == (11301, 180816)  # 178,880 published: +1.1 %
    assert round(v.kv_cache_gb * 1e9 / GIB, 2) == 8.10
    arch = est.architecture
    extra = fp8_moe_profile_bytes(arch, 8192, "fp8_e4m3", vllm_profile("0.8"))
    assert extra == int(8192 * 8 * 4096 * 25.6) == 6_871_947_673
    assert any("FP8 MoE peaks 6.40 GiB" in n for n in est.assumptions)
    # only where it was measured: not BF16 MoE, dense models, or the V0-era profiles
    assert fp8_moe_profile_bytes(arch, 8192, "bf16", vllm_profile("v1")) == 0
    assert fp8_moe_profile_bytes(arch, 8192, "fp8_e4m3", vllm_profile("v0")) == 0
    assert fp8_moe_profile_bytes(get_architecture("llama-3.1-70b"), 8192, "fp8_e4m3", vllm_profile("v1")) == 0


def test_mlx_peak_counts_the_prefill_step() -> None:
    """mlx_lm.benchmark -p 2048 -g 128: Llama-3.2-3B 4-bit 3.285 GB before mlx-lm 0.27 (PR #396), Qwen3-4B 4-bit
    3.30 GB on 0.31.3 (PR #1569); weights + KV alone were 22-37 % under."""
    old = estimate_inference_memory("llama-3.2-3b", "mlx-4bit", 2176, runtime="mlx", prompt_tokens=2048,
                                    mlx_lm_version="0.26.4")
    assert round(old.per_gpu_gb, 3) == 3.226
    assert old.breakdown["kv_cache"] == pytest.approx(2304 * 114_688 / 1e9)  # grown in 256-token steps
    assert any("2,048 x 128,256 x 2 bytes" in n for n in old.assumptions)  # the whole last step's logits
    new = estimate_inference_memory("llama-3.2-3b", "mlx-4bit", 2176, runtime="mlx", prompt_tokens=2048)
    assert round(old.per_gpu_gb - new.per_gpu_gb, 3) == 0.525  # 0.27 keeps the last token's logits only
    qwen = estimate_inference_memory("qwen3-4b", "mlx-4bit", 2176, runtime="mlx", prompt_tokens=2048)
    assert round(qwen.per_gpu_gb, 3) == 3.306 and qwen.prefill_chunk == 2048
    assert quant_spec("mlx-4bit").bits_per_weight == 4.5 and quant_spec("mlx-4bit").embedding_bits == 4.5


def test_mlx_lm_version_is_checked() -> None:
    with pytest.raises(InvalidRequestError) as e:
        estimate_inference_memory("qwen3-4b", runtime="vllm", mlx_lm_version="0.26")
    assert e.value.field == "mlx_lm_version"
    with pytest.raises(InvalidRequestError, match=r"0\.26 or 0\.26\.4"):
        estimate_inference_memory("qwen3-4b", runtime="mlx", mlx_lm_version="latest")


def test_memory_rows_score() -> None:
    """At least 90 % of the published memory rows within ±10 % (issue 47); today all of them."""
    ok, n = score()
    assert (ok, n) == (14, 14)
    assert ok / n >= 0.9
    assert {r.cite for r in ROWS} >= {"vLLM issue #21348", "mlx-lm PR #396", "mlx-lm PR #1569", "vLLM PR #2031"}


def test_cli_mlx_lm_version(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from holysheep.cli import main

    argv = ["plan", "llama-3.2-3b", "--quant", "mlx-4bit", "--runtime", "mlx", "--context", "2176",
            "--prompt-tokens", "2048", "--gpus", "M4 Max", "--json"]
    assert main(argv) == 0
    current = json.loads(capsys.readouterr().out)["memory"]
    assert main([*argv, "--mlx-lm-version", "0.26.4"]) == 0
    old = json.loads(capsys.readouterr().out)["memory"]
    assert old != current
    assert main(["plan", "llama-3.2-3b", "--mlx-lm-version", "0.26.4"]) == 2
    assert "--mlx-lm-version 0.26.4 applies to --runtime mlx" in capsys.readouterr().err

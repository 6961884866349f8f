"""max_context / max_batch agree with fits(): it holds at the answer and not one step above."""

from __future__ import annotations

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.estimator import estimate_inference_memory, max_batch, max_context

CASES = [
    ("llama-3.1-8b", "L4", 1, "bf16", {}),
    ("llama-3.1-70b", "L40S", 1, "int4-awq", {}),
    ("llama-3.1-70b", "L40S", 1, "int4-awq", {"runtime": "vllm", "gpu_memory_utilization": 0.95}),
    ("llama-3.1-70b", "RTX 4090", 2, "q4_k_m", {"runtime": "llama.cpp"}),
    ("qwen2.5-32b", "A100 80GB", 1, "bf16", {"runtime": "sglang"}),
    # the H200 row has no public CUDA total: sized from the driver's figure, with the warning that
    # tests/estimator/test_cuda_total.py checks
    pytest.param("deepseek-v3", "H200", 8, "fp8", {"runtime": "vllm"},
                 marks=pytest.mark.filterwarnings("ignore:vLLM sizes its memory budget:UserWarning")),
]


@pytest.mark.parametrize(("model", "gpu", "count", "quant", "opts"), CASES)
def test_max_context_is_the_edge_of_fits(model: str, gpu: str, count: int, quant: str, opts: dict[str, object]) -> None:
    got = max_context(model, gpu, count, quant=quant, **opts)  # type: ignore[arg-type]
    assert got > 0 and got % 256 == 0
    assert estimate_inference_memory(model, quant, got, **opts).fits(gpu, count)  # type: ignore[arg-type]
    limit = estimate_inference_memory(model, quant, 256).architecture.max_position_embeddings
    if got + 256 <= limit:
        assert not estimate_inference_memory(model, quant, got + 256, **opts).fits(gpu, count)  # type: ignore[arg-type]


@pytest.mark.parametrize(("model", "gpu", "count", "quant", "opts"), CASES)
def test_max_batch_is_the_edge_of_fits(model: str, gpu: str, count: int, quant: str, opts: dict[str, object]) -> None:
    got = max_batch(model, gpu, 4096, count, quant=quant, **opts)  # type: ignore[arg-type]
    assert got >= 1
    assert estimate_inference_memory(model, quant, 4096, got, **opts).fits(gpu, count)  # type: ignore[arg-type]
    assert not estimate_inference_memory(model, quant, 4096, got + 1, **opts).fits(gpu, count)  # type: ignore[arg-type]


def test_pinned_values_and_edge_cases() -> None:
    assert max_context("llama-3.1-8b", "L4") == 40448  # 22,888 MiB = 24.0 GB, less a 1.2 GB reserve
    assert max_context("llama-3.1-8b", "L40S") == 131072  # the model's own limit
    assert max_context("llama-3.1-70b", "L4") == 0  # weights alone do not fit
    assert max_batch("llama-3.1-70b", "L4", 4096) == 0
    est = estimate_inference_memory("llama-3.1-8b", "bf16", 1024, runtime="vllm")
    assert max_context(est, "L4") == max_context("llama-3.1-8b", "L4", runtime="vllm")
    with pytest.raises(InvalidRequestError):
        max_context(est, "L4", runtime="hf")
    with pytest.raises(InvalidRequestError):
        max_batch("llama-3.1-8b", "L4", 0)

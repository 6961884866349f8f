"""Decode attention per runtime release (KV-cache passes) and the SM-limited stream of cut-down parts (issue 39)."""

from __future__ import annotations

import pytest

from holysheep.accelerators import gpu
from holysheep.accelerators._loader import row_from_mapping
from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import decode_tokens_per_s, pick_hardware
from holysheep.hardware._picker import decode_inputs
from holysheep.hardware._speed import SM_STREAM_GB_S, kv_passes, stream_bandwidth_gb_s

from .test_speed_validation import ROWS, _modelled

N8B = 8_030_261_248
W8B = 2 * N8B
KV = 131_072  # bytes per token, Llama-3.1-8B BF16 (8 KV heads x 128 x 2 x 2 bytes x 32 layers)


def test_kv_passes_per_runtime_and_release() -> None:
    # Qwen2-7B: 28 query heads over 4 KV heads, group 7
    # (passes from memory, repeats from L2)
    assert kv_passes("hf", 7) == (17.0, 0.0)  # cat (read + write) + repeat_kv (read 1, write 7) + SDPA (read 7)
    assert kv_passes("vllm", 7, flash_decode=False) == (1.0, 6.0)  # one paged-attention block per query head
    assert kv_passes("vllm", 7) == kv_passes("sglang", 7) == kv_passes("llama.cpp", 7) == (1.0, 0.0)
    assert kv_passes("hf", 0) == (5.0, 0.0)  # a degenerate group counts as 1

    def passes(runtime: str, version: str = "v1", model: str = "qwen2.5-7b") -> tuple[float, float]:
        est = estimate_inference_memory(model, "bf16", 8192, runtime=runtime, vllm_version=version)
        d = decode_inputs(est)
        return float(d["kv_passes"]), float(d["kv_repeats"])

    assert passes("vllm", "0.4") == passes("vllm", "0.2.5") == (1, 6)
    assert passes("vllm", "v0") == passes("vllm") == passes("sglang") == passes("default") == (1, 0)
    assert passes("hf") == (17, 0)
    assert passes("hf", model="deepseek-v3") == (5, 0)  # MLA: one latent shared by every head


def test_passes_stream_at_the_kv_rate_and_l2_repeats_at_the_weight_rate() -> None:
    """Each pass from memory streams at ``kv_read`` (0.5) of eta; a repeat served by L2 at eta; one fused pass
    alone (FlashAttention-style decode) streams at eta (issue 47)."""
    args = {"weight_bytes": W8B, "kv_bytes_per_token": KV, "context": 8192, "batch": 4, "params": N8B,
            "active_params": N8B}
    once = 4 * KV * 8192
    for passes, repeats in ((1.0, 0.0), (17.0, 0.0), (1.0, 3.0)):
        got = decode_tokens_per_s(gpu("H100"), 1, kv_passes=passes, kv_repeats=repeats, **args)  # type: ignore[arg-type]
        slow = 0.5 if (passes, repeats) != (1.0, 0.0) else 1.0
        assert got == pytest.approx(4 * 3350e9 * 0.7 / (W8B + passes * once / slow + repeats * once))


def test_a_part_with_fewer_sms_streams_at_what_they_draw() -> None:
    h20 = gpu("H20")
    assert h20.sms == 78 and h20.bandwidth_gb_s == 4000
    assert stream_bandwidth_gb_s(h20) == pytest.approx(78 * 4800 / 132) == pytest.approx(2836.36, abs=0.01)
    assert round(SM_STREAM_GB_S, 2) == 36.36
    for name in ("H100", "H200", "A100 80GB", "RTX 4090", "M2 Ultra"):  # no SM count listed: the datasheet figure
        assert stream_bandwidth_gb_s(gpu(name)) == gpu(name).bandwidth_gb_s
    got = decode_tokens_per_s(h20, 1, weight_bytes=W8B, kv_bytes_per_token=0.0, context=0, batch=1, params=N8B,
                              active_params=N8B)
    assert got == pytest.approx(78 * 4800 / 132 * 1e9 * 0.7 / W8B)
    user = row_from_mapping({"id": "my-h20", "memory_gb": 96, "bandwidth_gb_s": 4000, "sms": 39}, None, "x")
    assert user.sms == 39 and stream_bandwidth_gb_s(user) == pytest.approx(39 * 4800 / 132)


def _row(**match: object) -> dict[str, object]:
    (row,) = [r for r in ROWS if all(r.get(k) == v for k, v in match.items())]
    return row


@pytest.mark.parametrize(("match", "low", "high"), [
    # vLLM 0.4.2 (paged attention per query head), Qwen2-7B at 128k: was +74 % with one pass
    ({"model": "Qwen2.5-7B", "quant": "bf16", "runtime": "vllm", "context": 131072}, -0.32, -0.22),
    # transformers 4.38, Qwen2-72B BF16 on 3 A100s at 32k: was +201 %
    ({"model": "Qwen2-72B", "quant": "bf16", "runtime": "hf", "context": 32768}, -0.15, -0.05),
    # SGLang 0.4.6 on an H20, Qwen3-8B BF16: was +72 % at the datasheet 4.0 TB/s
    ({"model": "Qwen3-8B", "quant": "bf16", "runtime": "sglang"}, 0.25, 0.35),
])
def test_published_rows_the_new_terms_explain(match: dict[str, object], low: float, high: float) -> None:
    row = _row(**match)
    err = _modelled(row) / float(row["tokens_per_s"]) - 1  # type: ignore[arg-type]
    assert low < err < high, err


def test_the_planner_quotes_the_slower_release() -> None:
    def rate(version: str) -> float:
        est = estimate_inference_memory("qwen2.5-7b", "bf16", 131072, runtime="vllm", vllm_version=version)
        (opt,) = pick_hardware(est, gpus=["a100-80-sxm"], gpu_count=1)
        assert opt.decode_tokens_per_s_batch1 is not None
        return opt.decode_tokens_per_s_batch1

    assert round(rate("v1"), 1) > 1.5 * round(rate("0.4"), 1)


def test_a_transformers_table_outside_the_set() -> None:
    """Qwen1.5-7B (MHA, same shape as Llama-2-7B) on an A100 under transformers, without FA2, batch 1, 2,048
    new tokens (QwenLM/Qwen2.5 docs/source/benchmark/hf_infer.rst at 14544eb): 40.05 / 26.95 / 16.18 / 8.89."""
    published = {2049: 40.05, 8193: 26.95, 16385: 16.18, 32769: 8.89}
    for context, rate in published.items():
        est = estimate_inference_memory("llama-2-7b", "bf16", context, runtime="hf")
        (opt,) = pick_hardware(est, gpus=["a100-80-sxm"], gpu_count=1)
        assert opt.decode_tokens_per_s_batch1 is not None
        assert -0.15 < opt.decode_tokens_per_s_batch1 / rate - 1 < 0.01, (context, opt.decode_tokens_per_s_batch1)


def test_transformers_fp8_linears_pay_two_triton_launches_each() -> None:
    from holysheep.hardware._overheads import TRITON_LAUNCH_S, runtime_cost

    assert TRITON_LAUNCH_S == 49e-6
    assert runtime_cost("hf", "nvidia", fp8=True).host_linear_s == 98e-6
    assert runtime_cost("hf", "nvidia").host_linear_s == runtime_cost("vllm", "nvidia", fp8=True).host_linear_s == 0

    def shape(model: str, quant: str = "fp8") -> dict[str, object]:
        return decode_inputs(estimate_inference_memory(model, quant, 2048, runtime="hf"))

    assert (shape("qwen3-8b")["linears"], shape("qwen3-8b")["fp8"]) == (252, True)  # 36 layers x 7
    assert shape("qwen3-8b", "bf16")["fp8"] is False
    assert shape("qwen3-30b-a3b")["linears"] == 4 * 48 + 3 * 48 * 8  # attention + the 8 routed experts' MLPs
    # host-bound: 28 layers x 0.75 ms + 196 linears x 98 us + 1 ms a step
    kw = {**shape("qwen3-0.6b"), "batch": 1}
    got = decode_tokens_per_s(gpu("H20"), 1, **kw)  # type: ignore[arg-type]
    assert got == pytest.approx(1 / (28 * 0.75e-3 + 196 * 98e-6 + 1e-3))
    row = _row(model="Qwen3-0.6B", quant="fp8", runtime="hf")
    assert -0.06 < _modelled(row) / float(row["tokens_per_s"]) - 1 < 0.04  # type: ignore[arg-type]  # was +85 %

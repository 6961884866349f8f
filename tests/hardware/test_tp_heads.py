"""KV heads are replicated when tensor parallelism exceeds them (vLLM, SGLang): counted, not rejected."""

from __future__ import annotations

import pytest

from holysheep.estimator import estimate_inference_memory
from holysheep.estimator._parallel import tensor_parallel_problem
from holysheep.hardware import pick_hardware


@pytest.mark.parametrize(("heads", "kv", "tp", "ok"), [
    (64, 4, 8, True),     # Qwen3-235B-A22B: each KV head on 2 GPUs
    (16, 2, 4, True),     # Qwen3-Next-80B-A3B
    (32, 8, 8, True), (32, 8, 4, True), (32, 8, 1, True),
    (24, 6, 4, False),    # 4 neither divides 6 nor is a multiple of it
    (24, 6, 12, True),    # 12 = 2 x 6
    (28, 4, 8, False),    # query heads must split evenly
])
def test_the_rule(heads: int, kv: int, tp: int, ok: bool) -> None:
    assert (tensor_parallel_problem(heads, kv, tp) is None) == ok
    assert tensor_parallel_problem(128, 1, 16, mla=True) is None  # MLA: latent cache on every rank


def test_qwen3_235b_on_h100_offers_the_model_cards_tp8() -> None:
    res = pick_hardware("qwen3-235b-a22b", gpus=["H100"])
    (opt,) = list(res)
    assert (opt.count, opt.tensor_parallel, opt.fits) == (8, 8, True) and res.rejected == []


def test_qwen3_next_on_4_h100_is_accepted() -> None:
    res = pick_hardware("qwen3-next-80b-a3b", gpus=["H100"], gpu_count=4)
    assert [o.count for o in res] == [4] and res.rejected == []


def test_replicated_kv_heads_are_counted_on_every_gpu() -> None:
    """Qwen3-235B: 94 layers x 4 KV heads x 128 x 2 (K, V) x 2 B = 192,512 B/token in all. TP 4 holds one
    head per GPU (48,128 B/token); TP 8 still holds one per GPU (replicated), not half of one."""
    est = estimate_inference_memory("qwen3-235b-a22b", context=32768)
    tokens = 32768
    kv = {tp: est.with_tensor_parallel(tp).breakdown["kv_cache"] for tp in (1, 4, 8)}
    assert kv[1] == pytest.approx(192_512 * tokens / 1e9)
    assert kv[4] == pytest.approx(48_128 * tokens / 1e9) and kv[8] == kv[4]
    notes = est.with_tensor_parallel(8).assumptions
    assert "TP 8 > 4 KV heads: each KV head is replicated on 2 GPUs (its cache counted on each)" in notes

from __future__ import annotations

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.hardware import (
    EFFICIENCY_SOURCES,
    Efficiencies,
    compute_peak,
    decode_tokens_per_s,
    gpu,
    prefill_tokens_per_s,
    train_tokens_per_s,
)

# Llama-3.1-8B: 8,030,261,248 params, BF16 weights 16.06 GB (estimator.md section 7)
N8B = 8_030_261_248
W8B = 2 * N8B


def _decode(name: str, count: int = 1, batch: int = 1, **kw: object) -> float:
    args: dict[str, object] = {"weight_bytes": W8B, "kv_bytes_per_token": 0.0, "context": 0, "batch": batch,
                               "params": N8B, "active_params": N8B}
    args.update(kw)
    return decode_tokens_per_s(gpu(name), count, **args)  # type: ignore[arg-type]


def test_decode_worked_example_h100_and_l4() -> None:
    # gpus.md 8.1: 3,350 / 16.1 ~ 208 bound, ~146 at eta 0.7; L4 ~13
    assert _decode("H100") == pytest.approx(3350e9 * 0.7 / W8B)
    assert round(_decode("H100"), 1) == 146.0
    assert round(_decode("L4"), 2) == 13.08


def test_decode_reads_kv_for_each_sequence() -> None:
    kv = 131_072  # bytes per token, Llama-3.1-8B bf16
    got = _decode("H100", batch=4, kv_bytes_per_token=kv, context=8192)
    step = (W8B + 4 * kv * 8192) / (3350e9 * 0.7)  # one fused pass reads the KV at the weight-stream rate
    assert got == pytest.approx(4 / step)


def test_decode_becomes_compute_bound_at_large_batch() -> None:
    got = _decode("L4", batch=2048)
    compute_bound = 2048 / (2 * N8B * 2048 / (121e12 * 0.5))
    assert got == pytest.approx(compute_bound)


def test_tensor_parallel_efficiency_depends_on_the_link() -> None:
    assert _decode("L4", count=2) == pytest.approx(2 * 0.6 * _decode("L4"))
    assert _decode("H100", count=2) == pytest.approx(2 * 0.9 * _decode("H100"))
    # MI250X: one package is two devices linked by Infinity Fabric, and AMD eta_bw is 0.6
    assert _decode("MI250X") == pytest.approx(3277e9 * 0.6 * 0.9 / W8B)


def test_int4_weight_only_uses_lower_bandwidth_efficiency() -> None:
    plain = _decode("H100", weight_bytes=W8B / 4)
    int4 = _decode("H100", weight_bytes=W8B / 4, weight_only_int4=True)
    assert int4 == pytest.approx(plain * 0.5 / 0.7)


def test_moe_reads_only_active_experts_at_small_batch() -> None:
    # Mixtral-8x7B: 46.7B total, 12.88B active
    total, active = 46_702_792_704, 12_879_921_152
    b1 = _decode("H100", weight_bytes=2 * total, params=total, active_params=active)
    assert b1 == pytest.approx(3350e9 * 0.7 / (2 * total * active / total))


def test_prefill_and_training() -> None:
    # gpus.md 8.2: 2,000-token prompt on H100 at 50% MFU ~ 65 ms
    tps = prefill_tokens_per_s(gpu("H100"), 1, active_params=N8B)
    assert tps is not None and round(2000 / tps * 1000) == 65
    fp8 = prefill_tokens_per_s(gpu("H100"), 1, active_params=N8B, precision="fp8")
    assert fp8 == pytest.approx(1979e12 * 0.5 / (2 * N8B))
    l4 = prefill_tokens_per_s(gpu("L4"), 1, active_params=N8B)
    assert l4 is not None and round(2000 / l4, 2) == 0.53
    tr = train_tokens_per_s(gpu("A100"), 8, active_params=6_738_415_616)
    assert tr == pytest.approx(8 * 312e12 * 0.4 * 0.9 / (6 * 6_738_415_616))
    lora = train_tokens_per_s(gpu("A100"), 1, active_params=6_738_415_616, flops_per_param=4)
    assert lora == pytest.approx(312e12 * 0.4 / (4 * 6_738_415_616))


def test_compute_peak_fallbacks() -> None:
    assert compute_peak(gpu("V100"), "bf16") == (125, "fp16")
    assert compute_peak(gpu("A100"), "fp8") == (312, "bf16")
    assert compute_peak(gpu("H100"), "fp8") == (1979, "fp8")
    assert compute_peak(gpu("RTX 4090"), "fp4") == (330.3, "fp8")


def test_efficiencies_are_configurable_and_validated() -> None:
    slow = Efficiencies(bandwidth=0.35)
    assert _decode("H100", eff=slow) == pytest.approx(_decode("H100") / 2)
    with pytest.raises(InvalidRequestError, match="bandwidth"):
        Efficiencies(bandwidth=1.5)
    assert set(EFFICIENCY_SOURCES) == set(vars(Efficiencies()))

"""Picker behaviour against a stand-in estimate that follows the estimator's contract."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.hardware import Efficiencies, HardwareOption, PickResult, gpu, pick_hardware


@dataclass(frozen=True)
class FakeInference:
    """per_gpu_gb = weights_gb / tp + fixed_gb."""

    weights_gb: float = 100.0
    fixed_gb: float = 2.0
    heads: int = 32
    kv_heads: int = 8
    params: float = 50e9
    active: float = 50e9
    tensor_parallel: int = 1
    context: int = 1024
    batch: int = 2
    quant_spec: Any = field(default_factory=lambda: SimpleNamespace(
        name="bf16", bits_per_weight=16.0, requires_native=None, compute_dtype="bf16"))

    @property
    def architecture(self) -> Any:
        return SimpleNamespace(num_attention_heads=self.heads, num_key_value_heads=self.kv_heads,
                               num_params=self.params, num_active_params=self.active)

    @property
    def per_gpu_gb(self) -> float:
        return self.weights_gb / self.tensor_parallel + self.fixed_gb

    @property
    def weights_bytes_total(self) -> float:
        return self.weights_gb * 1e9

    kv_cache_bytes_per_token: float = 100_000.0

    def with_tensor_parallel(self, n: int) -> FakeInference:
        return replace(self, tensor_parallel=n)


@dataclass(frozen=True)
class FakeTraining:
    states_gb: float = 120.0
    activations_gb: float = 10.0
    num_gpus: int = 1
    zero_stage: int = 3

    @property
    def architecture(self) -> Any:
        return SimpleNamespace(num_params=7e9, num_active_params=7e9, num_attention_heads=32,
                               num_key_value_heads=32)

    @property
    def per_gpu_gb(self) -> float:
        return self.states_gb / self.num_gpus + self.activations_gb

    def with_num_gpus(self, n: int) -> FakeTraining:
        return replace(self, num_gpus=n)


def test_counts_are_powers_of_two_and_smallest_fit_wins_on_cost() -> None:
    res = pick_hardware(FakeInference(), gpus=["h100", "l4"], max_gpus=8)
    assert isinstance(res, PickResult)
    by_id = {o.gpu.id: o for o in res}
    assert by_id["h100-sxm"].count == 2  # 52 GB fits 77.31 usable (0.9 x 85.9); 1x needs 102
    assert by_id["h100-sxm"].per_gpu_gb == 52.0
    assert by_id["h100-sxm"].headroom_gb == pytest.approx(0.9 * 85.9 - 52.0)
    assert by_id["l4"].count == 8  # 14.5 GB <= 21.6 usable
    assert by_id["l4"].tensor_parallel == 8
    assert res.rejected == []


def test_option_numbers_are_the_roofline() -> None:
    (o,) = pick_hardware(FakeInference(), gpus=["h100"])
    bytes_step = 100e9 + 2 * 100_000 * 1024  # one fused pass reads the KV at the weight-stream rate
    decode = 2 / (bytes_step / (2 * 3350e9 * 0.7 * 0.9))
    assert o.decode_tokens_per_s == pytest.approx(decode)
    assert o.price_per_hour == pytest.approx(2 * 3.49)
    assert o.cost_per_million_tokens == pytest.approx(2 * 3.49 / (decode * 3600) * 1e6)
    assert o.prefill_tokens_per_s == pytest.approx(2 * 989.4e12 * 0.5 * 0.9 / (2 * 50e9))
    assert o.fits and o.reason is None and o.label == "2x H100 SXM5 80GB"


def test_heads_not_divisible_by_tp() -> None:
    est = FakeInference(weights_gb=600.0, heads=24, kv_heads=6)
    res = pick_hardware(est, gpus=["h100"], max_gpus=8)
    assert list(res) == []
    (rej,) = res.rejected
    assert rej.reason_code == "does_not_fit" and rej.count == 2
    assert "larger counts: heads do not shard over 4 GPUs: 4 GPUs do not divide the 6 KV heads" in (rej.reason or "")


def test_budget_filters_and_unpriced_gpus_are_rejected_under_a_budget() -> None:
    res = pick_hardware(FakeInference(), gpus=["h100", "a100", "gaudi2"], budget_per_hour=5.0)
    assert [o.gpu.id for o in res] == ["a100-80-sxm"]  # 2 x 1.59
    reasons = {o.gpu.id: o.reason_code for o in res.rejected}
    assert reasons == {"h100-sxm": "over_budget", "gaudi2": "no_price"}
    h100 = next(o for o in res.rejected if o.gpu.id == "h100-sxm")
    assert h100.fits and h100.reason == "over budget: $6.98/h > $5.00/h"


def test_fp8_is_rejected_without_native_fp8() -> None:
    spec = SimpleNamespace(name="fp8", bits_per_weight=8.0, requires_native="fp8", compute_dtype="fp8")
    res = pick_hardware(FakeInference(quant_spec=spec), gpus=["a100", "h100", "mi250x"])
    assert [o.gpu.id for o in res] == ["h100-sxm"]
    assert {o.gpu.id: o.reason_code for o in res.rejected} == {
        "a100-80-sxm": "no_native_precision", "mi250x": "no_native_precision"}
    assert "no native fp8 path" in res.rejected[0].reason  # type: ignore[operator]


def test_awq_rejected_on_volta_and_bf16_served_as_fp16() -> None:
    awq = SimpleNamespace(name="int4-awq", bits_per_weight=4.16, requires_native=None, compute_dtype="fp16")
    res = pick_hardware(FakeInference(weights_gb=10, quant_spec=awq), gpus=["v100", "t4"])
    assert [o.gpu.id for o in res] == ["t4"]
    assert res.rejected[0].gpu.id == "v100-sxm2" and "7.5+" in res.rejected[0].reason  # type: ignore[operator]
    (t4,) = pick_hardware(FakeInference(weights_gb=10), gpus=["t4"])
    assert "no BF16 on this part: served in FP16" in t4.notes


def test_objectives_order_options() -> None:
    est = FakeInference(weights_gb=20)
    cheapest = pick_hardware(est, gpus=["h100", "l4", "b200"], objective="cost")  # lowest $/h that fits
    assert [(o.gpu.id, o.count, o.price_per_hour) for o in cheapest] == [
        ("l4", 2, pytest.approx(1.40)), ("h100-sxm", 1, 3.49), ("b200", 1, 6.69)]
    cost = pick_hardware(est, gpus=["h100", "l4", "b200"], objective="cost_per_token")
    assert [o.gpu.id for o in cost] == ["b200", "h100-sxm", "l4"]
    b200_decode = 2 / ((20e9 + 2 * 100_000 * 1024) / (7700e9 * 0.7))
    assert cost[0].cost_per_million_tokens == pytest.approx(6.69 / (b200_decode * 3600) * 1e6)
    costs = [o.cost_per_million_tokens for o in cost]
    assert costs == sorted(costs)  # type: ignore[type-var]
    latency = pick_hardware(est, gpus=["h100", "l4", "b200"], objective="latency", max_gpus=2)
    assert latency[0].gpu.id == "b200" and latency[0].count == 2
    speeds = [o.decode_tokens_per_s_batch1 for o in latency]
    assert speeds == sorted(speeds, reverse=True)  # type: ignore[type-var]
    thr = pick_hardware(est, gpus=["h100", "l4"], objective="throughput", max_gpus=4)
    assert thr[0].gpu.id == "h100-sxm" and thr[0].count == 4


def test_mi250x_counts_two_devices_per_package() -> None:
    (o,) = pick_hardware(FakeInference(weights_gb=100), gpus=["mi250x"])
    assert o.count == 1 and o.tensor_parallel == 2
    assert o.usable_gb_per_gpu == pytest.approx(137.44 / 2 * 0.9)  # 64 GiB per GCD


def test_training_estimates_use_data_parallel_counts() -> None:
    res = pick_hardware(FakeTraining(), gpus=["a100"], max_gpus=8)
    (o,) = res
    assert o.count == 2  # 120/2 + 10 = 70 GB <= 72 usable; 1x needs 130
    assert o.per_gpu_gb == 70
    assert o.decode_tokens_per_s is None
    assert o.train_tokens_per_s == pytest.approx(2 * 312e12 * 0.4 * 0.9 / (6 * 7e9))
    train = 2 * 312e12 * 0.4 * 0.9 / (6 * 7e9)
    assert o.cost_per_million_tokens == pytest.approx(2 * 1.59 / (train * 3600) * 1e6)
    (zero0,) = pick_hardware(FakeTraining(states_gb=120, num_gpus=1), gpus=["a100"], max_gpus=1).rejected
    assert zero0.reason_code == "does_not_fit"


def test_custom_efficiencies_and_memory_fraction() -> None:
    (slow,) = pick_hardware(FakeInference(weights_gb=20), gpus=["h100"], efficiencies=Efficiencies(bandwidth=0.35))
    (fast,) = pick_hardware(FakeInference(weights_gb=20), gpus=["h100"])
    assert slow.decode_tokens_per_s == pytest.approx(fast.decode_tokens_per_s / 2)  # type: ignore[operator]
    (tight,) = pick_hardware(FakeInference(weights_gb=70), gpus=["h100"], memory_fraction=1.0)
    assert tight.count == 1 and tight.usable_gb_per_gpu == 85.9


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"objective": "speed"}, "objective"), ({"max_gpus": 0}, "max_gpus"), ({"memory_fraction": 1.5},
     "memory_fraction"), ({"budget_per_hour": -1.0}, "budget_per_hour")],
)
def test_bad_arguments(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        pick_hardware(FakeInference(), **kwargs)
    assert info.value.field == name


def test_rendering_and_json() -> None:
    res = pick_hardware(FakeInference(), gpus=["h100", "gaudi2"], budget_per_hour=10)
    text = str(res)
    assert "2x H100 SXM5 80GB" in text and "Rejected" in text and "no price known" in text
    assert res._repr_html_().count("<table>") == 2
    d = res[0].to_dict()
    assert d["gpu"] == "h100-sxm" and d["count"] == 2 and d["label"] == "2x H100 SXM5 80GB"
    assert isinstance(res[0], HardwareOption) and gpu(d["gpu"]) is res[0].gpu

"""Issue 39 point 8: "cheapest" is the lowest hourly price that meets the request; training ranks by the real link."""

from __future__ import annotations

import pytest

from holysheep.estimator import estimate_training_memory
from holysheep.hardware import gpu, pick_hardware
from holysheep.hardware._speed import link_kind, scale_up_domain


def test_cheapest_gpu_for_an_8b_in_bf16_at_8k_is_the_lowest_hourly_price() -> None:
    res = pick_hardware("llama-3.1-8b", quant="bf16", context=8192)
    hourly = [o.price_per_hour for o in res]
    priced = [h for h in hourly if h is not None]
    assert priced == sorted(priced) and hourly[:len(priced)] == priced  # unpriced GPUs last
    assert (res[0].gpu.id, res[0].count, res[0].price_per_hour) == ("rtx5090", 1, pytest.approx(0.69))
    per_token = pick_hardware("llama-3.1-8b", quant="bf16", context=8192, objective="cost_per_token")
    assert per_token[0].gpu.id == "gh200"  # what "cost" used to answer: a 96 GB GPU, cheapest per token at batch 1
    assert res[0].price_per_hour < per_token[0].price_per_hour  # type: ignore[operator]


@pytest.mark.parametrize(("name", "domain", "eight"), [
    ("H100", 8, "switch"), ("GB200", 72, "switch"), ("GH200", 1, "network"), ("H100 NVL", 2, "pcie"),
    ("L40S", 1, "pcie"), ("MI250X", 16, "switch"),
])
def test_scale_up_domains(name: str, domain: int, eight: str) -> None:
    g = gpu(name)
    assert scale_up_domain(g) == domain and link_kind(g, 8 * g.devices_per_package) == eight
    assert link_kind(gpu("H100"), 16) == "network" and link_kind(gpu("GB200"), 64) == "switch"


def test_multi_gpu_training_ranks_by_the_real_interconnect() -> None:
    """8 GH200 superchips meet over the network (0.6 link factor), 8 H100s on one NVLink board (0.9)."""
    est = estimate_training_memory("llama-3.1-8b", method="full", zero_stage=3, num_gpus=8, seq_len=2048)
    res = pick_hardware(est, gpus=["GH200", "H100"], gpu_count=8, objective="throughput")
    by = {o.gpu.id: o for o in res}
    n = est.architecture.num_params
    assert by["h100-sxm"].train_tokens_per_s == pytest.approx(8 * 989.4e12 * 0.4 * 0.9 / (6 * n))
    assert by["gh200"].train_tokens_per_s == pytest.approx(8 * 989.4e12 * 0.4 * 0.6 / (6 * n))
    assert [o.gpu.id for o in res] == ["h100-sxm", "gh200"]
    assert any("over the network: NVLink joins 1 GPU at most" in n for n in by["gh200"].notes)

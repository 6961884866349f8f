"""Issue 30, point 5: training plans offer only hardware the training stack runs on, keep an allocator
reserve, turn checkpointing on for QLoRA, and say which switch would make a rejected run fit."""

from __future__ import annotations

import pytest

from holysheep.estimator import estimate_training_memory
from holysheep.hardware import pick_hardware

NOT_FOR_TRAINING = {"inferentia2", "m2-ultra", "m3-ultra", "m4-max", "agx-orin-64", "dgx-spark", "ryzen-ai-max-395"}


def test_zero3_over_8_devices_offers_only_training_platforms() -> None:
    est = estimate_training_memory("llama-3.2-1b", zero_stage=3, num_gpus=8, seq_len=2048)
    result = pick_hardware(est, gpu_count=8)
    offered = {o.gpu.id for o in result}
    assert offered and not offered & NOT_FOR_TRAINING
    why = {o.gpu.id: o for o in result.rejected}
    assert why["inferentia2"].reason_code == "no_training_stack" and "inference-only" in str(why["inferentia2"].reason)
    assert "MLX LoRA" in str(why["m4-max"].reason) and why["m4-max"].reason_code == "no_training_stack"
    for soc in ("dgx-spark", "ryzen-ai-max-395", "agx-orin-64"):
        assert why[soc].reason_code == "runtime_limit" and "1 device" in str(why[soc].reason)
    tpu = next(o for o in result if o.gpu.id == "tpu-v6e")  # offered, with the stack it needs
    assert any("JAX/XLA" in n for n in tpu.notes)
    gaudi = next(o for o in result if o.gpu.id == "gaudi3")
    assert any("optimum-habana" in n for n in gaudi.notes)


def test_apple_silicon_only_for_mlx_lora_on_one_machine() -> None:
    lora = estimate_training_memory("llama-3.1-8b", method="lora", seq_len=2048)
    mac = pick_hardware(lora, gpus=["m4-max"], max_gpus=8)
    assert [o.count for o in mac] == [1] and any("MLX LoRA" in n for n in mac[0].notes)
    assert pick_hardware(lora.with_num_gpus(2), gpus=["m4-max"], gpu_count=2).rejected[0].reason_code == "runtime_limit"
    qlora_tpu = pick_hardware(estimate_training_memory("llama-3.1-8b", method="qlora"), gpus=["tpu-v6e"])
    assert "bitsandbytes" in str(qlora_tpu.rejected[0].reason)


def test_qlora_checkpoints_by_default_and_a_reserve_is_kept() -> None:
    q = estimate_training_memory("llama-3.1-70b", method="qlora", seq_len=2048)
    assert q.gradient_checkpointing == "full" and any("QLoRA recipes" in a for a in q.assumptions)
    assert q.per_gpu_gb == pytest.approx(47.77, abs=0.01)
    none = estimate_training_memory("llama-3.1-70b", method="qlora", seq_len=2048, gradient_checkpointing="none")
    assert none.per_gpu_gb == pytest.approx(98.80, abs=0.01)
    check = q.memory_check(48)
    assert check.limit_gb == pytest.approx(45.6) and not check.fits  # 47.77 of 48 GB no longer "fits"
    assert q.memory_check(12).limit_gb == pytest.approx(11.0)  # at least 1 GB
    assert q.fits("H100") and not q.fits("L40S")
    assert "L40S" not in [o.gpu.id for o in pick_hardware(q, gpus=["l40s", "h100-sxm"])]


@pytest.mark.parametrize(
    ("kwargs", "gpu", "count", "hint"),
    [
        ({"method": "qlora", "gradient_checkpointing": "none"}, 80, 1, "fits with gradient_checkpointing='full'"),
        ({}, 80, 8, "fits with zero_stage=3"),
        ({}, 80, 1, "fits with zero_stage=2 and offload_optimizer=True"),
        ({"method": "lora", "seq_len": 16384, "gradient_checkpointing": "full"}, 24, 1, "fits at seq_len=2048"),
        ({"method": "qlora"}, 48, 1, "fits at seq_len=1024"),
    ],
)
def test_a_rejection_names_the_switch_that_fits(kwargs: dict[str, object], gpu: int, count: int, hint: str) -> None:
    model = "llama-3.1-70b" if kwargs.get("method") == "qlora" else "llama-3.1-8b"
    est = estimate_training_memory(model, **{"seq_len": 2048, **kwargs})  # type: ignore[arg-type]
    assert not est.fits(gpu, count)
    text = est.fit_hint(gpu, count)
    assert text is not None and text.startswith(hint)


def test_the_picker_puts_the_hint_in_the_rejection() -> None:
    est = estimate_training_memory("llama-3.1-8b", seq_len=2048, num_gpus=8)
    rejected = pick_hardware(est, gpus=["h100-sxm"], gpu_count=8).rejected[0]
    assert rejected.reason_code == "does_not_fit" and "; fits with zero_stage=3" in str(rejected.reason)

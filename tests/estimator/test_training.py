"""Training estimates: ZeRO accounting, optimizers, LoRA/QLoRA, activations, measured rows."""

from __future__ import annotations

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import estimate_training_memory, get_architecture, quant_spec, weight_bytes
from holysheep.estimator._training import lora_params, model_state_bytes

GIB = 2**30


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage: int, gb: float) -> None:
    # ZeRO paper (arXiv:1910.02054, Fig. 1): Ψ = 7.5B, 64 GPUs, 16 bytes/param accounting
    gpu, _ = model_state_bytes(
        params=7_500_000_000,
        precision="mixed",
        optimizer="adamw",
        zero_stage=stage,
        num_gpus=64,
        accounting="zero-paper",
    )
    assert sum(gpu.values()) / 1e9 == pytest.approx(gb, abs=0.05)


def test_deepspeed_estimators_t5_3b() -> None:
    # DeepSpeed docs memory.rst (current code): t5-3b on 1 node x 8 GPUs
    P, llp = 2_851_000_000, 32_128 * 1024

    def gib(stage: int, offload: bool = False, params_off: bool = False) -> float:
        gpu, _ = model_state_bytes(
            params=P,
            precision="mixed",
            optimizer="adamw",
            zero_stage=stage,
            num_gpus=8,
            offload_optimizer=offload,
            offload_params=params_off,
            largest_layer_params=llp,
        )
        return sum(gpu.values()) / GIB

    assert gib(2) == pytest.approx(11.28, abs=0.01)  # 2P + 18P/N (the docs' 15.93 predates PR #5099)
    assert gib(2, offload=True) == pytest.approx(5.31, abs=0.01)
    assert gib(3) == pytest.approx(6.10, abs=0.01)
    assert gib(3, offload=True) == pytest.approx(0.79, abs=0.01)
    assert gib(3, offload=True, params_off=True) == pytest.approx(0.12, abs=0.01)
    _, cpu = model_state_bytes(
        params=P, precision="mixed", optimizer="adamw", zero_stage=2, num_gpus=8, offload_optimizer=True
    )
    assert cpu == pytest.approx(16 * P)


def test_torchtune_llama2_7b_rows() -> None:
    # torchtune PR #389 (Llama-2-7B full fine-tune): pure bf16 AdamW ~54 GB, 8-bit AdamW ~40.5 GB,
    # bf16 weights + grads 27.83 GB peak
    def states(opt: str) -> float:
        tr = estimate_training_memory("Llama-2-7B", "bf16-true", opt, seq_len=512, gradient_checkpointing="full")
        return sum(v for k, v in tr.breakdown.items() if k != "activations")

    assert states("adamw") == pytest.approx(54, rel=0.10)
    assert states("adamw-8bit") == pytest.approx(40.5, rel=0.10)
    assert states("sgd-no-momentum") == pytest.approx(27.83, rel=0.10)


def test_llama2_7b_full_finetune_ooms_on_one_a100() -> None:
    # row 10: OOM on one A100-80GB; ZeRO-3 over 8 GPUs fits
    tr = estimate_training_memory("Llama-2-7B", seq_len=2048)
    assert tr.breakdown["master_weights"] == pytest.approx(26.95, abs=0.01)
    assert tr.breakdown["optimizer"] == pytest.approx(53.91, abs=0.01)
    assert not tr.fits(80)
    z3 = estimate_training_memory("Llama-2-7B", seq_len=2048, zero_stage=3, num_gpus=8)
    assert z3.fits(80) and z3.with_num_gpus(1).per_gpu_gb > 100
    assert z3.total_gb == pytest.approx(z3.per_gpu_gb * 8)


def test_blog_training_calls() -> None:
    with pytest.warns(UserWarning):
        seven = estimate_training_memory(7, "bf16", seq_len=2048)
    with pytest.warns(UserWarning):
        seventy = estimate_training_memory(70, "bf16", seq_len=2048)
    assert 117 <= seven.per_gpu_gb <= 138  # 16 B/param: 107.8 GB of states + activations
    assert seventy.per_gpu_gb > 10 * seven.per_gpu_gb / 1.2  # the blog printed 96 GB for both
    assert any("bf16-mixed" in a for a in seven.assumptions)


def test_optimizers_and_precisions_order() -> None:
    kw = {"seq_len": 1024}
    adam = estimate_training_memory("Llama-3.1-8B", optimizer="adamw", **kw).breakdown["optimizer"]
    adam8 = estimate_training_memory("Llama-3.1-8B", optimizer="adamw-8bit", **kw).breakdown["optimizer"]
    sgd = estimate_training_memory("Llama-3.1-8B", optimizer="sgd", **kw).breakdown["optimizer"]
    ada = estimate_training_memory("Llama-3.1-8B", optimizer="adafactor", **kw).breakdown["optimizer"]
    assert adam == pytest.approx(8 * 8.030261248) and sgd == pytest.approx(adam / 2)
    assert adam8 == pytest.approx(8.030261248 * (2 + 8 / 256))
    assert 0 < ada < 0.01 * adam
    fp32 = estimate_training_memory("Llama-3.1-8B", "fp32", **kw).breakdown
    assert fp32["weights"] == pytest.approx(4 * 8.030261248) and fp32["master_weights"] == 0


def test_lora_and_qlora() -> None:
    arch = get_architecture("Llama-3.1-8B")
    assert lora_params(arch, 16) == 41_943_040  # PEFT's count for r=16 on all linear layers
    lora = estimate_training_memory("Llama-3.1-8B", method="lora", lora_rank=16, seq_len=2048)
    assert lora.trainable_params == 41_943_040
    assert lora.breakdown["weights"] == pytest.approx((2 * 8_030_261_248 + 4 * 41_943_040) / 1e9)
    assert lora.breakdown["optimizer"] == pytest.approx(8 * 41_943_040 / 1e9)
    qlora = estimate_training_memory("Llama-3.1-8B", method="qlora", seq_len=2048)
    nf4 = weight_bytes(arch, quant_spec("nf4"))
    assert qlora.breakdown["weights"] == pytest.approx((nf4 + 4 * 41_943_040) / 1e9)
    assert qlora.per_gpu_gb < lora.per_gpu_gb


def test_activation_recompute_and_flash_attention() -> None:
    def act(ckpt: str, fa: bool) -> float:
        return estimate_training_memory(
            "Llama-2-7B", seq_len=2048, gradient_checkpointing=ckpt, flash_attention=fa
        ).breakdown["activations"]

    # Llama-2-7B layer: 37.5 sbh (+ fp32 LSE); 32 layers; logits 2048 x 32000 x 10 B; final norm input
    s, h = 2048, 4096
    expected_fa = (32 * (37.5 * s * h + 4 * 32 * s) + s * (2 * h + 10 * 32_000)) / 1e9
    assert act("none", True) == pytest.approx(expected_fa)
    assert act("none", False) == pytest.approx(expected_fa + 32 * (2 * 32 * s * s - 4 * 32 * s) / 1e9)
    assert act("selective", False) < act("none", True)
    assert act("full", True) < 0.2 * act("none", True)
    gpt = estimate_training_memory("GPT-2", seq_len=1024, flash_attention=False).details["per_layer_gb"]
    assert gpt == pytest.approx(1024 * (34 * 768 + 5 * 12 * 1024) / 1e9)  # Korthikanti: sbh(34 + 5as/h)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"zero_stage": 4}, "zero_stage"),
        ({"precision": "int4"}, "precision"),
        ({"optimizer": "lion"}, "optimizer"),
        ({"method": "dora"}, "method"),
        ({"offload_optimizer": True}, "offload_optimizer"),
        ({"zero_stage": 2, "offload_params": True}, "offload_params"),
        ({"seq_len": 0}, "seq_len"),
        ({"num_gpus": 0}, "num_gpus"),
        ({"gradient_checkpointing": "some"}, "gradient_checkpointing"),
        ({"lora_rank": -1}, "lora_rank"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidRequestError) as exc:
        estimate_training_memory("Llama-3.1-8B", **kwargs)  # type: ignore[arg-type]
    assert exc.value.field == field


def test_rendering_and_fields() -> None:
    tr = estimate_training_memory("Qwen2.5-0.5B", zero_stage=2, num_gpus=4, offload_optimizer=True)
    assert tr.zero_stage == 2 and tr.num_gpus == 4 and tr.method == "full" and tr.architecture.name == "Qwen2.5-0.5B"
    assert tr.breakdown["optimizer"] == 0 and tr.cpu_offload_gb > 0
    text = str(tr)
    assert "master_weights" in text and "CPU memory" in text and "x 4 GPUs" in text
    assert "<table>" in tr._repr_html_()

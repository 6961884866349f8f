"""Effective bits per weight and whole-model weight bytes."""

from __future__ import annotations

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import get_architecture, list_quants, quant_spec, weight_bytes


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("fp32", 32),
        ("bf16", 16),
        ("fp16", 16),
        ("fp8", 8),
        ("int8", 8),
        ("int4-awq", 4.15625),
        ("int4-gptq", 4.1640625),
        ("nf4", 4.126953125),
        ("q8_0", 8.5),
        ("q6_k", 6.5625),
        ("q4_k_m", 4.8944),
        ("q4_0", 4.5),
    ],
)
def test_effective_bits(name: str, bits: float) -> None:
    spec = quant_spec(name)
    assert spec.bits_per_weight == pytest.approx(bits, abs=1e-9)
    assert spec.source and spec.description


def test_fields_and_aliases() -> None:
    assert quant_spec("fp8").requires_native == "fp8"
    assert quant_spec("int4-awq").requires_native is None
    assert quant_spec("AWQ") is quant_spec("int4") is quant_spec("int4-awq")
    assert quant_spec("int4-awq").weight_dtype == "int4" and quant_spec("nf4").compute_dtype == "bf16"
    assert quant_spec("q4_k_m").embedding_bits == pytest.approx(4.8944)
    assert len(list_quants()) == 20  # + int8-w8a8, int4-w4a16, nvfp4, gguf-mxfp4, mlx-4bit, mlx-8bit


def test_unknown_quant_names_the_choices() -> None:
    with pytest.raises(InvalidRequestError) as exc:
        quant_spec("int3")
    assert exc.value.field == "quant" and "int4-awq" in str(exc.value)


def test_weight_bytes_match_reference_examples() -> None:
    # AutoAWQ g128 checkpoints with 16-bit embeddings/lm_head: 36.6 GB (Llama-2-70B), 39.8 GB (Llama-3-70B)
    assert weight_bytes(get_architecture("Llama-2-70B"), quant_spec("int4-awq")) / 1e9 == pytest.approx(36.6, abs=0.05)
    assert weight_bytes(get_architecture("Llama-3.1-70B"), quant_spec("int4-awq")) / 1e9 == pytest.approx(
        39.8, abs=0.05
    )
    # int8 linear layers + fp16 embed/lm_head = 7.01 GB for Llama-2-7B
    assert weight_bytes(get_architecture("Llama-2-7B"), quant_spec("int8")) / 1e9 == pytest.approx(7.01, abs=0.01)
    l7 = get_architecture("Llama-2-7B")
    assert weight_bytes(l7, quant_spec("fp16")) == 2 * 6_738_415_616
    q8 = weight_bytes(l7, quant_spec("q8_0"))  # GGUF quantizes embeddings too; only norms stay wider
    assert q8 == round(((6_738_415_616 - 266_240) * 8.5 + 266_240 * 16) / 8)

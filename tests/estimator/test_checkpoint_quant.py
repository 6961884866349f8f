"""Quantization read from a checkpoint's config.json, with the modules its ignore list keeps unquantized."""

from __future__ import annotations

from typing import Any

import pytest

from holysheep.estimator import catalog_entry, estimate_inference_memory, get_architecture

LLAMA_8B = dict(catalog_entry("Llama-3.1-8B").config)
LLAMA_70B = dict(catalog_entry("Llama-3.1-70B").config)
# Llama-3.1-8B per layer: q, o 4096 x 4096; k, v 4096 x 1024; 32 layers
ATTN_8B = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
DOWN_8B = 32 * 14336 * 4096


def _ct(weights: dict[str, Any], acts: dict[str, Any] | None, ignore: list[str], fmt: str) -> dict[str, Any]:
    return {"quant_method": "compressed-tensors", "format": fmt, "ignore": ignore,
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": acts}}}


W8A8_INT8 = _ct({"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
                {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}, ["lm_head"], "int-quantized")
FP8 = _ct({"num_bits": 8, "type": "float", "strategy": "channel"},
          {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}, ["lm_head"], "float-quantized")
W4A16 = _ct({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}, None, ["lm_head"],
            "pack-quantized")


def _est(cfg: dict[str, Any], qc: dict[str, Any]) -> Any:
    return estimate_inference_memory({**cfg, "quantization_config": qc})


def test_70b_w8a8_is_about_68_gib_and_fits_one_80gb_gpu() -> None:
    est = _est(LLAMA_70B, W8A8_INT8)
    assert est.quant_label == "int8-w8a8 (as shipped)" and est.warnings == []
    gib = est.weights_bytes_total / 2**30
    assert gib == pytest.approx(67.70, abs=0.01)  # 68.5B int8 + 2 x 1.05B bf16 (embeddings, lm_head); not 131
    assert est.fits("H100") and est.quant_spec.requires_native == "int8"


@pytest.mark.parametrize(("qc", "name"), [
    (FP8, "fp8"), (W4A16, "int4-w4a16"),
    ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}, "fp8"),
    ({"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head"]}, "fp8"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}, "nvfp4"),
    (_ct({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
         {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}, ["lm_head"],
         "nvfp4-pack-quantized"), "nvfp4"),
])
def test_each_format_is_read(qc: dict[str, Any], name: str) -> None:
    est = _est(LLAMA_8B, qc)
    assert est.quant == name and est.quant_as_shipped and est.warnings == []
    plain = estimate_inference_memory("Llama-3.1-8B", quant=name)
    assert est.weights_bytes_total == plain.weights_bytes_total  # lm_head only: 16-bit in every format already


@pytest.mark.parametrize(("qc", "kept"), [
    ({**FP8, "ignore": ["lm_head", "re:.*self_attn.*"]}, ATTN_8B),
    ({"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["self_attn"]}, ATTN_8B),
    ({"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]},
     ATTN_8B),
    ({**FP8, "ignore": ["lm_head", "model.layers.0.mlp.down_proj"]}, DOWN_8B // 32),
])
def test_ignored_modules_are_counted_at_their_dtype(qc: dict[str, Any], kept: int) -> None:
    """An FP8 checkpoint with attention left in BF16 holds 1 extra byte per attention weight (1.34 GB here)."""
    est = _est(LLAMA_8B, qc)
    fp8 = estimate_inference_memory("Llama-3.1-8B", quant="fp8")
    assert est.weights_bytes_total - fp8.weights_bytes_total == kept  # 16 - 8 bits on each kept weight
    assert any("the checkpoint leaves unquantized" in a for a in est.assumptions)


def test_moe_ignore_lists_name_the_router_and_attention() -> None:
    """Qwen3-30B-A3B FP8 with attention and the routers kept (as llm-compressor's MoE recipes do)."""
    cfg = dict(catalog_entry("Qwen3-30B-A3B").config)
    arch = get_architecture("Qwen3-30B-A3B")
    est = _est(cfg, {**FP8, "ignore": ["lm_head", "re:.*mlp.gate$", "re:.*self_attn.*"]})
    attn = sum(m.params for m in arch.weight_matrices() if m.name in ("q_proj", "k_proj", "v_proj", "o_proj"))
    fp8 = estimate_inference_memory("Qwen3-30B-A3B", quant="fp8")
    assert est.weights_bytes_total - fp8.weights_bytes_total == attn  # routers are 16-bit in any format


def test_an_unread_group_still_warns() -> None:
    est = _est(LLAMA_8B, _ct({"num_bits": 2, "type": "int"}, None, [], "pack-quantized"))
    assert est.quant == "bf16" and "2-bit int weights" in est.warnings[0] and "pass quant=" in est.warnings[0]

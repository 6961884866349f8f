"""Issue 30, point 3: a catalog model is planned in the format its checkpoint ships in unless told otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holysheep.estimator import catalog_entry, estimate_inference_memory, get_architecture, max_context
from holysheep.hardware import pick_hardware


@pytest.mark.parametrize(
    ("name", "quant"),
    [("DeepSeek-V3", "fp8"), ("DeepSeek-R1", "fp8"), ("DeepSeek-V3.2-Exp", "fp8"), ("Kimi-K2-Instruct", "fp8"),
     ("MiniMax-M2", "fp8"), ("gpt-oss-20b", "mxfp4"), ("gpt-oss-120b", "mxfp4"), ("Llama-3.1-8B", "bf16")],
)
def test_the_catalog_records_the_shipped_format_and_estimates_default_to_it(name: str, quant: str) -> None:
    assert catalog_entry(name).quant == quant
    est = estimate_inference_memory(name)
    assert est.quant == quant and est.quant_as_shipped == (quant != "bf16")
    if quant != "bf16":
        assert est.quant_label == f"{quant} (as shipped)" and f"{quant} (as shipped) weights" in str(est)
        assert any("the format the checkpoint ships in" in a for a in est.assumptions)


def test_deepseek_v3_fp8_fits_8x_h200_not_8x_h100() -> None:
    est = estimate_inference_memory("deepseek-v3")
    assert 670 < est.weights_bytes_total / 1e9 < 690  # 671 B params at ~1 byte (bf16 embeddings, head)
    assert est.fits("H200", 8) and not est.fits("H100", 8)
    bf16 = estimate_inference_memory("deepseek-v3", quant="bf16")
    assert not bf16.quant_as_shipped and 1_340 < bf16.weights_bytes_total / 1e9 < 1_345  # the old default
    assert not bf16.fits("H200", 8)
    best = pick_hardware("deepseek-v3", gpus=["H200", "H100"])[0]
    assert (best.gpu.id, best.count) == (pick_hardware("deepseek-v3", gpus=["H200"])[0].gpu.id, 8)


def test_gpt_oss_in_mxfp4_runs_on_one_h100() -> None:
    best = pick_hardware("gpt-oss-120b", gpus=["H100"])[0]
    assert best.count == 1 and best.fits and 65 < best.per_gpu_gb < 68
    assert max_context("gpt-oss-120b", "H100", 1) == get_architecture("gpt-oss-120b").max_position_embeddings
    small = estimate_inference_memory("gpt-oss-20b")
    assert small.weights_bytes_total / 2**30 == pytest.approx(12.8, abs=0.05)  # the card's 12.8 GiB checkpoint
    assert 13.5 < small.per_gpu_gb < 15  # about 13 GB of weights, not 41.8 GB in bf16
    assert estimate_inference_memory("gpt-oss-20b", quant="bf16").per_gpu_gb > 41


def test_anything_but_a_catalog_name_stays_bf16() -> None:
    arch = get_architecture("DeepSeek-V3")
    est = estimate_inference_memory(arch)
    assert est.quant == "bf16" and not est.quant_as_shipped and "(as shipped)" not in str(est)
    assert estimate_inference_memory("deepseek-v3", quant="fp8").quant_as_shipped is False  # asked for, not assumed


def test_a_config_is_planned_in_its_quantization_config_format(tmp_path: Path) -> None:
    cfg = dict(catalog_entry("DeepSeek-V3").config)
    fp8 = {**cfg, "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}
    est = estimate_inference_memory(fp8)
    assert est.quant_label == "fp8 (as shipped)" and est.warnings == []
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fp8))
    assert estimate_inference_memory(str(path)).quant == "fp8" and estimate_inference_memory(tmp_path).quant == "fp8"
    llama = dict(catalog_entry("Llama-3.1-8B").config)
    for qc, quant in [({"quant_method": "awq", "bits": 4, "group_size": 128}, "int4-awq"),
                      ({"quant_method": "gptq", "bits": 4}, "int4-gptq"),
                      ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "nf4")]:
        assert estimate_inference_memory({**llama, "quantization_config": qc}).quant == quant
    odd = estimate_inference_memory({**llama, "quantization_config": {"quant_method": "compressed-tensors"}})
    assert odd.quant == "bf16" and "quant_method 'compressed-tensors'" in odd.warnings[0]  # said, not silent
    assert estimate_inference_memory({**llama, "quantization_config": {"quant_method": "awq", "bits": 4}},
                                     quant="bf16").warnings == []  # asked for explicitly

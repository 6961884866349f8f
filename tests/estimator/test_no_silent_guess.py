"""Issue 30, point 1: a config is counted exactly or refused, never read as Llama-shaped behind a warning."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from holysheep.estimator import (
    Architecture,
    ArchitectureWarning,
    UnsupportedArchitectureError,
    estimate_inference_memory,
    estimate_training_memory,
)

SNAPSHOTS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "hf_configs.json").read_text())["configs"]

# model types no family maps (some Llama-like, some not): each must be refused, naming the model_type
NEVER_MAPPED = ["internlm2", "olmo2", "granite", "exaone", "mamba", "rwkv", ""]


@pytest.mark.parametrize("key", sorted(SNAPSHOTS))
def test_each_snapshot_is_exact_or_refused(key: str) -> None:
    snap = SNAPSHOTS[key]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an exact count needs no warning
        try:
            arch = Architecture.from_hf_config(snap["config"], key)
        except UnsupportedArchitectureError as exc:
            assert repr(snap["config"]["model_type"]) in str(exc)
            return
    published = float(snap["published"])
    assert abs(arch.num_params / published - 1) <= float(snap["tolerance"]) + 1e-12, (arch.num_params, published)


@pytest.mark.parametrize("model_type", NEVER_MAPPED)
def test_an_unmapped_model_type_is_refused_with_its_name_and_fields(model_type: str) -> None:
    cfg = {"model_type": model_type, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100, "partial_rotary_factor": 0.5, "use_parallel_residual": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UnsupportedArchitectureError) as err:
            Architecture.from_hf_config(cfg)
    msg = str(err.value)
    assert f"unmapped model_type {model_type or '(missing)'!r}" in msg
    assert "partial_rotary_factor, use_parallel_residual" in msg  # the fields it would have ignored
    assert err.value.reason == "unsupported model_type" and "assume='llama'" in msg


def test_an_assumed_llama_reading_is_carried_in_every_estimate() -> None:
    cfg = {"model_type": "newdense", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100}
    with pytest.warns(ArchitectureWarning, match="Llama-shaped"):
        arch = Architecture.from_hf_config(cfg, assume="llama")
    assert arch.num_params == 100 * 64 * 2 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
    assert len(arch.assumptions) == 1 and "newdense" in arch.assumptions[0]
    inf = estimate_inference_memory(arch)
    train = estimate_training_memory(arch)
    for est in (inf, train):
        assert est.warnings[0] == arch.assumptions[0]
        assert f"warning: {arch.assumptions[0]}" in str(est)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a mapped family reads silently and carries nothing
        assert Architecture.from_hf_config({**cfg, "model_type": "llama"}).assumptions == ()


def test_the_text_decoder_only_reading_is_a_warning_of_the_estimate() -> None:
    text = {"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 128, "vocab_size": 100}
    with pytest.warns(ArchitectureWarning):
        arch = Architecture.from_hf_config({"model_type": "mistral3", "text_config": text, "vision_config": {}})
    assert any("only the text decoder" in w for w in estimate_inference_memory(arch).warnings)

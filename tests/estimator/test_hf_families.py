"""Config families read by ``from_hf_config``: exact counts, and layouts it must refuse rather than miscount."""

from __future__ import annotations

import warnings

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import (
    Architecture,
    ArchitectureWarning,
    UnsupportedArchitectureError,
    catalog_entry,
    get_architecture,
    list_models,
    quant_spec,
    weight_bytes,
)

QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "tie_word_embeddings": False, "max_position_embeddings": 40960,
}


def test_qwen3_moe_counts_its_experts() -> None:
    arch = Architecture.from_hf_config(QWEN3_30B_A3B)
    assert arch.num_params == 30_532_122_624  # transformers on the meta device: 30.53 B (issue 16)
    assert arch.num_active_params == 3_353_032_704  # model card: 3.3 B activated
    assert arch.num_moe_layers == 48 and arch.qk_norm
    dense_first = Architecture.from_hf_config({**QWEN3_30B_A3B, "mlp_only_layers": [0, 1]})
    assert dense_first.num_moe_layers == 46 and dense_first.num_dense_layers == 2
    per_layer_moe = 128 * 3 * 2048 * 768 + 2048 * 128
    assert arch.num_params - dense_first.num_params == 2 * (per_layer_moe - 3 * 2048 * 6144)


def test_gpt_oss_counts_sinks_expert_and_router_biases() -> None:
    arch = get_architecture("gpt-oss-20b")
    assert arch.num_params == 20_914_757_184  # transformers; the old reading gave 20,908,119,360
    assert arch.num_params - 20_908_119_360 == 24 * (64 + 32 + 32 * (2 * 2880 + 2880))
    assert arch.windowed_layers() == tuple(range(0, 24, 2)) and arch.sliding_window == 128
    assert get_architecture("gpt-oss-120b").num_params == 116_829_156_672  # model card: 116.83 B


def test_mxfp4_quantizes_only_the_routed_experts() -> None:
    # gpt-oss model card (arXiv:2508.10925) Table 1: checkpoints of 12.8 GiB and 60.8 GiB
    spec = quant_spec("mxfp4")
    assert spec.bits_per_weight == 4.25 and spec.experts_only
    assert weight_bytes(get_architecture("gpt-oss-20b"), spec) / 2**30 == pytest.approx(12.8, abs=0.05)
    assert weight_bytes(get_architecture("gpt-oss-120b"), spec) / 2**30 == pytest.approx(60.8, abs=0.05)
    dense = get_architecture("Llama-3.1-8B")  # no experts: MXFP4 leaves a dense model at bf16
    assert weight_bytes(dense, spec) == weight_bytes(dense, quant_spec("bf16"))
    assert catalog_entry("gpt-oss-120b").quant == "mxfp4" and catalog_entry("DeepSeek-R1").quant == "fp8"
    assert catalog_entry("Llama-3.1-8B").quant == "bf16"


def test_llama4_interleaved_moe_with_shared_expert() -> None:
    scout, maverick = get_architecture("Llama-4-Scout-17B-16E"), get_architecture("Llama-4-Maverick-17B-128E")
    assert scout.num_moe_layers == 48 and scout.num_shared_experts == 1
    assert maverick.num_moe_layers == 24 and maverick.moe_layer_indices == tuple(range(1, 48, 2))
    assert scout.num_params == 107_769_861_120 and maverick.num_params == 400_711_848_960
    assert maverick.intermediate_size == 16384 and maverick.moe_intermediate_size == 8192
    # chunked attention (8192) on RoPE layers; every 4th layer (NoPE) is global
    assert scout.sliding_window == 8192 and 3 not in scout.windowed_layers() and 0 in scout.windowed_layers()


def test_multimodal_wrapper_counts_the_text_decoder_with_a_warning() -> None:
    text = dict(catalog_entry("Gemma-3-27B").config)
    text.pop("model_type")
    with pytest.warns(ArchitectureWarning, match="only the text decoder"):
        arch = Architecture.from_hf_config({"model_type": "gemma3", "text_config": text, "vision_config": {}})
    assert arch.num_params == get_architecture("Gemma-3-27B").num_params == 27_009_346_304
    assert arch.windowed_layers() == tuple(i for i in range(62) if (i + 1) % 6)


def test_gpt_bigcode_and_bloom() -> None:
    sc = get_architecture("StarCoder-15B")
    assert sc.num_key_value_heads == 1 and sc.num_params == 15_517_456_384  # model card: 15.5 B
    assert sc.kv_cache_bytes_per_token("fp16") == 40 * 2 * 128 * 2  # multi-query: one KV head
    bloom = get_architecture("BLOOM-176B")
    assert bloom.embedding_norm and bloom.learned_position_embeddings == 0
    assert bloom.num_params == 176_247_271_424  # BLOOM paper: 176,247 M


@pytest.mark.parametrize(
    "cfg",
    [
        {**QWEN3_30B_A3B, "model_type": "qwen3"},  # a MoE config labelled dense
        {**QWEN3_30B_A3B, "model_type": "qwen2_moe", "shared_expert_intermediate_size": 5632},
        {**QWEN3_30B_A3B, "model_type": "llama"},
        {**QWEN3_30B_A3B, "model_type": "somethingnew"},
        {**QWEN3_30B_A3B, "model_type": "mixtral", "num_local_experts": 8},  # fields of another family
        {"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 128, "vocab_size": 100, "layer_types": ["linear_attention", "full_attention"]},
        {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 128, "vocab_size": 100, "n_shared_experts": 2},
    ],
)
def test_unmapped_layout_fields_raise_instead_of_miscounting(cfg: dict[str, object]) -> None:
    with pytest.raises(UnsupportedArchitectureError, match="does not map") as err:
        Architecture.from_hf_config(cfg)
    assert isinstance(err.value, InvalidRequestError) and err.value.reason == "unsupported architecture"
    assert "Architecture" in str(err.value)  # says what to do instead


def test_mapped_families_read_silently() -> None:
    # an unmapped model_type is refused (tests/estimator/test_no_silent_guess.py)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in list_models():
            assert Architecture.from_hf_config(catalog_entry(name).config).assumptions == ()


def test_catalog_covers_current_open_models() -> None:
    names = set(list_models())
    assert len(names) >= 30
    for need in ("Qwen3-8B", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "gpt-oss-20b", "gpt-oss-120b",
                 "Llama-4-Scout-17B-16E", "Llama-4-Maverick-17B-128E", "DeepSeek-R1", "Mistral-Small-3-24B",
                 "Gemma-3-27B", "Phi-4"):
        assert need in names
    assert sum(get_architecture(n).is_moe for n in names) >= 8
    for q in ("Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2.5-72B"):  # Instruct config values
        e = catalog_entry(q)
        assert e.architecture.max_position_embeddings == 32768 and "-Instruct/" in e.source
    assert catalog_entry("qwen3-30b-a3b").name == "Qwen3-30B-A3B"


@pytest.mark.parametrize("name", [n for n in list_models() if catalog_entry(n).reported_active])
def test_moe_active_params_match_the_model_card(name: str) -> None:
    e = catalog_entry(name)
    ref = float(e.reported_active or 0)
    # counted the card's way (active_convention); a whole-billion card figure is rounded to +-0.5 B
    tol = max(0.02, 0.5e9 / ref) if ref % 1e9 == 0 else 0.02
    assert abs(e.card_active_params / ref - 1) <= tol


def test_active_params_follow_each_cards_convention() -> None:
    oss = catalog_entry("gpt-oss-20b")
    assert oss.architecture.num_active_params == 4_187_440_704  # everything a token touches, input table included
    assert oss.card_active_params == 3_608_307_264  # the card's 3.61 B leaves the input embedding out
    glm = catalog_entry("GLM-4.5")
    groups = glm.architecture.param_groups()
    assert glm.card_active_params == glm.architecture.num_active_params - groups["embedding"] - groups["lm_head"]
    assert catalog_entry("Qwen3-30B-A3B").card_active_params == 3_353_032_704  # Qwen counts the embeddings


def test_sparse_gemma3_hub_config_uses_the_text_config_defaults() -> None:
    # google/gemma-3-4b-it config.json lists only the text fields that differ from Gemma3TextConfig's defaults
    hub = {"model_type": "gemma3", "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                                                   "model_type": "gemma3_text", "num_hidden_layers": 34,
                                                   "sliding_window": 1024},
           "vision_config": {"model_type": "siglip_vision_model"}}
    with pytest.warns(ArchitectureWarning):
        arch = Architecture.from_hf_config(hub)
    assert arch.num_params == get_architecture("Gemma-3-4B").num_params == 3_880_263_168
    assert arch.kv_cache_bytes_per_token("bf16") == get_architecture("Gemma-3-4B").kv_cache_bytes_per_token("bf16")

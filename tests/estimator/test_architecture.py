"""Parameter counts and KV-cache bytes computed from config fields."""

from __future__ import annotations

import json

import pytest

from holysheep import InvalidRequestError
from holysheep.estimator import Architecture, catalog_entry, get_architecture, list_models
from holysheep.estimator._activations import layer_activation_bytes_per_token

# Published parameter counts (model cards, config.json on the Hugging Face hub) and bf16 KV bytes per token
PUBLISHED = {
    "Llama-2-7B": (6_738_415_616, 524_288),
    "Llama-2-70B": (68_976_648_192, 327_680),
    "Llama-3.1-8B": (8_030_261_248, 131_072),
    "Llama-3.1-70B": (70_553_706_496, 327_680),
    "Llama-3.1-405B": (405_853_388_800, 516_096),
    "Mistral-7B-v0.3": (7_248_023_552, 131_072),
    "Mixtral-8x7B": (46_702_792_704, 131_072),
    "Qwen2.5-7B": (7_615_616_512, 57_344),
    "Qwen2.5-72B": (72_706_203_648, 327_680),
    "Gemma-2-9B": (9_241_705_984, 344_064),
    "Phi-3-mini-4k": (3_821_079_552, 393_216),
    "GPT-2": (124_439_808, 36_864),
    "DeepSeek-V3": (671_026_419_200, 70_272),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_param_count_and_kv_match_published(name: str) -> None:
    arch = get_architecture(name)
    params, kv = PUBLISHED[name]
    assert abs(arch.num_params / params - 1) < 0.005
    assert arch.num_params == params  # every published total is reproduced exactly
    assert arch.kv_cache_bytes_per_token("bf16") == kv


@pytest.mark.parametrize("name", list_models())
def test_every_catalog_row_matches_its_published_figure(name: str) -> None:
    entry = catalog_entry(name)
    arch = entry.architecture
    n = arch.num_params + (arch.mtp_params if entry.reported_includes_mtp else 0)
    if entry.params is not None:
        assert abs(n / entry.params - 1) < 0.005
    elif entry.reported is not None and entry.reported_tolerance is not None:  # the row states its tolerance
        assert abs(n / entry.reported - 1) <= entry.reported_tolerance
    elif entry.reported is not None:  # model-card figures are rounded to 2-3 significant digits
        billions = f"{entry.reported / 1e9:g}"
        digits = len(billions.split(".")[1]) if "." in billions else 0
        rounds_to = round(n / 1e9, digits) == round(entry.reported / 1e9, digits)
        partial = "not counted" in entry.note  # the card's figure includes a vision encoder
        low = 0.02 if partial else 0.01
        assert rounds_to or -low * entry.reported <= n - entry.reported <= 0.01 * entry.reported
    assert entry.source.startswith("https://huggingface.co/") and entry.source.endswith("config.json")
    assert len(entry.as_of) == 10


def test_active_params_for_moe() -> None:
    assert get_architecture("Mixtral-8x7B").num_active_params == 12_879_925_248
    ds = get_architecture("DeepSeek-V3")
    assert abs(ds.num_active_params / 37.6e9 - 1) < 0.005  # "37B activated" (37.6B without MTP)
    assert get_architecture("Llama-3.1-8B").num_active_params == 8_030_261_248


def test_kv_cache_gqa_mla_fp8_and_tensor_parallel() -> None:
    l70 = get_architecture("Llama-3.1-70B")
    assert l70.kv_cache_bytes_per_token("fp8") == 163_840
    assert l70.kv_cache_bytes(8192, 4, "bf16") == 327_680 * 8192 * 4
    assert l70.kv_cache_bytes(1, 1, "bf16", tensor_parallel=4) == 81_920  # 2 KV heads per GPU
    assert l70.kv_cache_bytes(1, 1, "bf16", tensor_parallel=16) == 40_960  # 1 head, replicated
    ds = get_architecture("DeepSeek-V3")
    assert ds.kv_cache_bytes_per_token("fp8") == 61 * 576
    assert ds.kv_cache_bytes(1, 1, "bf16", tensor_parallel=8) == 70_272  # latent replicated per rank


def test_sliding_window_layers_are_capped() -> None:
    g = get_architecture("Gemma-2-9B")
    assert g.windowed_layers() == tuple(range(0, 42, 2))
    per_layer = 2 * 8 * 256 * 2
    assert g.kv_cache_bytes(8192, 1) == per_layer * (21 * 8192 + 21 * 4095)
    assert g.kv_cache_bytes(100, 2) == per_layer * 42 * 100 * 2  # below the window nothing is capped
    phi = get_architecture("Phi-3-mini-4k")
    assert phi.kv_cache_bytes(4096, 1) == 393_216 * 2046
    assert get_architecture("Mistral-7B-v0.3").windowed_layers() == ()


def test_from_hf_config_path_dir_and_dict(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = dict(catalog_entry("Qwen2.5-0.5B").config)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    a = Architecture.from_hf_config(tmp_path / "config.json")
    b = Architecture.from_hf_config(str(tmp_path))
    c = Architecture.from_hf_config(cfg, name="q")
    assert a.num_params == b.num_params == c.num_params == 494_032_768
    assert a.tie_word_embeddings and a.attention_bias and not a.attention_out_bias


def test_bad_configs_raise() -> None:
    with pytest.raises(InvalidRequestError, match="hidden_size"):
        Architecture.from_hf_config({"model_type": "llama", "num_hidden_layers": 2})
    with pytest.raises(InvalidRequestError, match="cannot read"):
        Architecture.from_hf_config("/nonexistent/config.json")
    with pytest.raises(InvalidRequestError, match="num_hidden_layers"):
        Architecture("x", 0, 64, 4, 4, 16, 128, 100)


def test_korthikanti_formula_exact_for_gpt_layers() -> None:
    gpt = get_architecture("GPT-2")
    h, a, s = 768, 12, 1024
    assert layer_activation_bytes_per_token(gpt, s, "none", flash_attention=False) == 34 * h + 5 * a * s
    assert layer_activation_bytes_per_token(gpt, s, "selective", flash_attention=False) == 34 * h
    llama = get_architecture("Llama-2-7B")  # GQA/SwiGLU/RMSNorm variant: 37.5 sbh (+ fp32 LSE with FA)
    assert layer_activation_bytes_per_token(llama, 2048, "none", flash_attention=True) == 37.5 * 4096 + 4 * 32

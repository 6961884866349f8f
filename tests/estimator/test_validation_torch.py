"""Estimator vs real torch/transformers objects (marker ``validation``; needs torch and transformers)."""

from __future__ import annotations

from typing import Any

import pytest

from holysheep.estimator import Architecture, catalog_entry, list_models
from holysheep.estimator._training import model_state_bytes


class _OnUse:
    """A module imported when a test first uses it (a missing one skips that test): the default run collects this
    file and deselects it, and would otherwise import torch and transformers (4 s) in every pytest worker."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> object:
        return getattr(pytest.importorskip(self._name), attr)


torch: Any = _OnUse("torch")
transformers: Any = _OnUse("transformers")

pytestmark = [
    pytest.mark.validation,
    # transformers' gpt_bigcode module decorates a function with torch.jit.script, which torch 2.13 deprecates;
    # that is theirs, raised at import while the meta model is built, not something this test can act on
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

# Model types newer than the transformers the `validation` extra pins (<5): their classes arrived in
# transformers 5. With an older transformers their meta-model checks are skipped, never silently passed.
NEWER_THAN_PIN = {"minimax_m2": "5.0", "deepseek_v32": "5.0"}


def _needs(model_type: str) -> None:
    if model_type in NEWER_THAN_PIN and model_type not in transformers.CONFIG_MAPPING:
        pytest.skip(f"transformers {transformers.__version__} has no {model_type!r} "
                    f"(needs >= {NEWER_THAN_PIN[model_type]})")


def _hf_config(name: str):  # type: ignore[no-untyped-def]
    cfg = dict(catalog_entry(name).config)
    model_type = cfg.pop("model_type")
    _needs(model_type)
    # Kimi-K2's remote-code type is DeepSeek-V3's layout (its config.json names DeepseekV3ForCausalLM)
    return transformers.AutoConfig.for_model("deepseek_v3" if model_type == "kimi_k2" else model_type, **cfg)


EXPERT_FIELDS = ("n_routed_experts", "num_experts", "num_local_experts")
"""Where a config names its routed experts (DeepSeek/Kimi/GLM, Qwen MoE, Mixtral/gpt-oss/Llama 4)."""
FEW_EXPERTS = (16, 32)
"""Expert counts a large MoE is built with instead of its own: both multiples of every catalog model's
``n_group`` and above its experts per token. Building Qwen3-Next's 512 x 48 experts on the meta device takes a
minute; 16 and 32 take seconds."""


def _real_count(cfg) -> int:  # type: ignore[no-untyped-def]
    """The meta model's parameters, with DeepSeek-V3's routing bias (a stored checkpoint tensor that
    transformers keeps as a buffer); tied weights are yielded once."""
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    return (sum(p.numel() for p in model.parameters())
            + sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias")))


@pytest.mark.parametrize("name", list_models())
def test_param_count_matches_meta_model(name: str) -> None:
    """The catalog's parameter count is the real model's. A model with more than 32 routed experts is built
    with 16 and with 32: its real count is affine in the expert count (each expert adds the same modules, the
    router one row, the routing bias one entry), so the two builds give the real count at its own number exactly,
    and the planner must match all three."""
    cfg = _hf_config(name)
    expected = catalog_entry(name).architecture.num_params
    field = next((f for f in EXPERT_FIELDS if (getattr(cfg, f, None) or 0) > max(FEW_EXPERTS)), None)
    if field is None:
        assert expected == _real_count(cfg)
        return
    experts = getattr(cfg, field)
    counts = []
    for few in FEW_EXPERTS:
        small = _hf_config(name)
        setattr(small, field, few)
        counts.append(_real_count(small))
        assert Architecture.from_hf_config(small.to_dict()).num_params == counts[-1], (field, few)
    per_expert, rest = divmod(counts[1] - counts[0], FEW_EXPERTS[1] - FEW_EXPERTS[0])
    assert rest == 0
    assert expected == counts[0] + (experts - FEW_EXPERTS[0]) * per_expert


def _cache_bytes(model, tokens: int, batch: int) -> int:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    with torch.no_grad():
        out = model(torch.randint(0, model.config.vocab_size, (batch, tokens)), use_cache=True)
    cache = out.past_key_values
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))


def test_kv_cache_bytes_match_gqa_model() -> None:
    cfg = transformers.AutoConfig.for_model(
        "llama",
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=8,
        num_key_value_heads=2,
        vocab_size=97,
        max_position_embeddings=128,
    )
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    arch = Architecture.from_hf_config(cfg.to_dict())
    assert _cache_bytes(model, 11, 3) == arch.kv_cache_bytes(11, 3, "fp32") == 3 * 2 * 2 * 8 * 4 * 11 * 3


def test_kv_cache_bytes_match_sliding_window_model() -> None:
    cfg = transformers.AutoConfig.for_model(
        "gemma2",
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=97,
        sliding_window=5,
        max_position_embeddings=128,
    )
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    arch = Architecture.from_hf_config(cfg.to_dict())
    assert arch.windowed_layers() == (0, 2)
    for tokens in (3, 12):
        assert _cache_bytes(model, tokens, 2) == arch.kv_cache_bytes(tokens, 2, "fp32")
    assert arch.kv_cache_bytes(12, 2, "fp32") < arch.kv_cache_bytes_per_token("fp32") * 12 * 2


def test_adamw_step_state_and_gradient_bytes() -> None:
    cfg = transformers.AutoConfig.for_model(
        "llama",
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=97,
    )
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    arch = Architecture.from_hf_config(cfg.to_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    ids = torch.randint(0, 97, (2, 16))
    model(ids, labels=ids).loss.backward()
    opt.step()
    P = sum(p.numel() for p in model.parameters())
    assert arch.num_params == P
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    states = sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items() if k != "step")
    gpu, _ = model_state_bytes(params=P, precision="fp32", optimizer="adamw", zero_stage=0, num_gpus=1)
    assert grads == gpu["gradients"] and states == gpu["optimizer"] and gpu["weights"] == 4 * P
    # bf16 params with bf16 states (pure bf16): 8 bytes/param in total
    model.to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    model(ids, labels=ids).loss.backward()
    opt.step()
    states = sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items() if k != "step")
    gpu, _ = model_state_bytes(params=P, precision="true16", optimizer="adamw", zero_stage=0, num_gpus=1)
    assert states == gpu["optimizer"] and sum(gpu.values()) == 8 * P


def _meta_count(cfg) -> int:  # type: ignore[no-untyped-def]
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in model.parameters())


_SMALL = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "vocab_size": 97, "max_position_embeddings": 256}
# one small config per mapped family, with the layout switches each family has; to_dict() carries every
# default transformers fills in, so the parser also sees the fields real config.json files have
FAMILY_CONFIGS = {
    "llama": dict(_SMALL, intermediate_size=96),
    "llama-bias": dict(_SMALL, intermediate_size=96, attention_bias=True, mlp_bias=True, tie_word_embeddings=True),
    "mistral": dict(_SMALL, intermediate_size=96, head_dim=24, sliding_window=16),
    "mixtral": dict(_SMALL, intermediate_size=80, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": dict(_SMALL, intermediate_size=96, tie_word_embeddings=True),
    "qwen3": dict(_SMALL, intermediate_size=96, head_dim=32),
    "qwen3_moe": dict(_SMALL, intermediate_size=96, moe_intermediate_size=40, num_experts=8, num_experts_per_tok=2,
                      head_dim=32),
    "qwen3_moe-sparse-step": dict(_SMALL, num_hidden_layers=6, intermediate_size=96, moe_intermediate_size=40,
                                  num_experts=8, num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[3]),
    "gpt_oss": dict(_SMALL, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                    sliding_window=8, layer_types=["sliding_attention", "full_attention"] * 2),
    "llama4_text": dict(_SMALL, intermediate_size=48, intermediate_size_mlp=96, num_local_experts=4,
                        num_experts_per_tok=1, head_dim=16, interleave_moe_layer_step=2, attention_chunk_size=32),
    "llama4_text-moe-layers": dict(_SMALL, intermediate_size=48, intermediate_size_mlp=96, num_local_experts=4,
                                   num_experts_per_tok=1, head_dim=16, moe_layers=[0, 3]),
    "gemma": dict(_SMALL, intermediate_size=96, head_dim=32),
    "gemma2": dict(_SMALL, intermediate_size=96, head_dim=32, sliding_window=16),
    "gemma3_text": dict(_SMALL, num_hidden_layers=7, intermediate_size=96, head_dim=32, sliding_window=16),
    "phi3": dict(_SMALL, intermediate_size=96, sliding_window=31, pad_token_id=0),
    "phi3-tied": dict(_SMALL, intermediate_size=96, tie_word_embeddings=True, partial_rotary_factor=0.75,
                      pad_token_id=0),
    "gpt2": {"n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 128, "vocab_size": 97},
    "gpt_bigcode": {"n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 128, "vocab_size": 97, "n_inner": 80},
    "gpt_bigcode-mha": {"n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 128, "vocab_size": 97,
                        "multi_query": False},
    "bloom": {"hidden_size": 64, "n_layer": 3, "n_head": 4, "vocab_size": 97},
    "deepseek_v3": dict(_SMALL, intermediate_size=96, moe_intermediate_size=32, n_routed_experts=8,
                        n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, kv_lora_rank=16,
                        q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_group=2,
                        topk_group=1),
    "deepseek_v32": dict(_SMALL, intermediate_size=96, moe_intermediate_size=32, n_routed_experts=8,
                         n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, kv_lora_rank=16,
                         q_lora_rank=24, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_group=2,
                         topk_group=1, index_n_heads=4, index_head_dim=16),
    "phi": dict(_SMALL, intermediate_size=96, partial_rotary_factor=0.4),
    "phi-qk-layernorm": dict(_SMALL, intermediate_size=96, qk_layernorm=True),
    "gpt_neox": dict(_SMALL, intermediate_size=96, rotary_pct=0.25, use_parallel_residual=True),
    "starcoder2": dict(_SMALL, intermediate_size=96, sliding_window=16),
    "cohere": dict(_SMALL, intermediate_size=96),
    "cohere-qk-norm": dict(_SMALL, intermediate_size=96, use_qk_norm=True),
    "falcon": {"hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 97},
    "falcon-new": {"hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 97,
                   "new_decoder_architecture": True, "num_kv_heads": 2},
    "falcon-sequential": {"hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 97,
                          "parallel_attn": False, "multi_query": False, "bias": True},
    "smollm3": dict(_SMALL, intermediate_size=96, no_rope_layers=[1, 1, 1, 0], pad_token_id=0),
    "glm4_moe": dict(_SMALL, intermediate_size=96, moe_intermediate_size=32, n_routed_experts=8, n_shared_experts=1,
                     num_experts_per_tok=2, first_k_dense_replace=1, head_dim=16, use_qk_norm=True,
                     attention_bias=True, partial_rotary_factor=0.5),
    "minimax_m2": dict(_SMALL, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                       rotary_dim=8),
    "qwen3_next": dict(_SMALL, intermediate_size=96, moe_intermediate_size=32, shared_expert_intermediate_size=24,
                       num_experts=8, num_experts_per_tok=2, head_dim=16, linear_num_key_heads=2,
                       linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                       linear_conv_kernel_dim=4),
}


@pytest.mark.parametrize("key", sorted(FAMILY_CONFIGS))
def test_family_param_counts_match_meta_model(key: str) -> None:
    _needs(key.split("-")[0])
    cfg = transformers.AutoConfig.for_model(key.split("-")[0], **FAMILY_CONFIGS[key])
    assert Architecture.from_hf_config(cfg.to_dict()).num_params == _real_count(cfg)


@pytest.mark.parametrize(
    ("model_type", "fields"),
    [
        ("qwen2_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                       "shared_expert_intermediate_size": 64}),
        ("phimoe", {"num_local_experts": 4, "num_experts_per_tok": 2}),
        ("olmoe", {"num_experts": 4, "num_experts_per_tok": 2}),
    ],
)
def test_unmapped_moe_families_raise_rather_than_miscount(model_type: str, fields: dict[str, int]) -> None:
    from holysheep.estimator import UnsupportedArchitectureError

    cfg = transformers.AutoConfig.for_model(model_type, **dict(_SMALL, intermediate_size=96, **fields))
    assert _meta_count(cfg) > 0
    with pytest.raises(UnsupportedArchitectureError):
        Architecture.from_hf_config(cfg.to_dict())


def test_installed_transformers_knows_every_mapped_model_type() -> None:
    from holysheep.estimator._hf import supported_model_types

    for mt in supported_model_types():
        if mt in NEWER_THAN_PIN:
            continue  # checked by _needs where used
        assert mt in transformers.CONFIG_MAPPING or mt == "kimi_k2", mt  # kimi_k2: remote code, DeepSeek-V3 layout


KV_CONFIGS = {
    "gemma3_text": dict(_SMALL, num_hidden_layers=7, intermediate_size=96, head_dim=32, sliding_window=5),
    "gpt_oss": dict(_SMALL, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                    sliding_window=5, layer_types=["sliding_attention", "full_attention"] * 2),
    "qwen3_moe": dict(_SMALL, intermediate_size=96, moe_intermediate_size=40, num_experts=8, num_experts_per_tok=2,
                      head_dim=32),
    "llama4_text": dict(_SMALL, intermediate_size=48, intermediate_size_mlp=96, num_local_experts=4,
                        num_experts_per_tok=1, head_dim=16, interleave_moe_layer_step=2, attention_chunk_size=5),
}


@pytest.mark.parametrize("model_type", sorted(KV_CONFIGS))
def test_kv_cache_bytes_match_new_families(model_type: str) -> None:
    """Sliding (Gemma 3, gpt-oss) and chunked (Llama 4 RoPE layers) caches hold window - 1 tokens."""
    cfg = transformers.AutoConfig.for_model(model_type, **KV_CONFIGS[model_type])
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    arch = Architecture.from_hf_config(cfg.to_dict())
    for tokens in (3, 12):
        assert _cache_bytes(model, tokens, 2) == arch.kv_cache_bytes(tokens, 2, "fp32")

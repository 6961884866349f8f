"""Estimator vs real torch/transformers objects (marker ``validation``; needs torch and transformers)."""

from __future__ import annotations

import pytest

from holysheep.estimator import Architecture, catalog_entry, list_models
from holysheep.estimator._training import model_state_bytes

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.validation


def _hf_config(name: str):  # type: ignore[no-untyped-def]
    cfg = dict(catalog_entry(name).config)
    return transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)


@pytest.mark.parametrize("name", list_models())
def test_param_count_matches_meta_model(name: str) -> None:
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(_hf_config(name))
    real = sum(p.numel() for p in model.parameters())  # tied weights are yielded once
    # DeepSeek-V3's routing bias is a stored checkpoint tensor that transformers keeps as a buffer
    real += sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias"))
    assert catalog_entry(name).architecture.num_params == real


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

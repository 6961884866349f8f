"""Translate Hugging Face ``config.json`` fields into `Architecture` keyword arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._exceptions import InvalidRequestError

__all__ = ["architecture_kwargs"]

_SUPPORTED = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "phi3",
    "gpt2",
    "deepseek_v2",
    "deepseek_v3",
)


def _req(cfg: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return int(v)
    raise InvalidRequestError(
        f"config.json lacks {' / '.join(keys)}; it is needed to size the model",
        field="model",
        reason=f"missing {keys[0]}",
    )


def _layers_from_types(layer_types: Any) -> tuple[int, ...] | None:
    if not isinstance(layer_types, (list, tuple)):
        return None
    return tuple(i for i, t in enumerate(layer_types) if t == "sliding_attention")


def architecture_kwargs(cfg: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    """Map one config dict to Architecture fields; unknown model types are read as Llama-like."""
    mt = str(cfg.get("model_type", "llama"))
    if mt == "gpt2":
        h = _req(cfg, "n_embd", "hidden_size")
        return {
            "name": name or "gpt2",
            "model_type": mt,
            "num_hidden_layers": _req(cfg, "n_layer", "num_hidden_layers"),
            "hidden_size": h,
            "num_attention_heads": _req(cfg, "n_head", "num_attention_heads"),
            "num_key_value_heads": _req(cfg, "n_head", "num_attention_heads"),
            "head_dim": h // _req(cfg, "n_head", "num_attention_heads"),
            "intermediate_size": int(cfg.get("n_inner") or 4 * h),
            "vocab_size": _req(cfg, "vocab_size"),
            "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True)),
            "attention_bias": True,
            "attention_out_bias": True,
            "mlp_gated": False,
            "mlp_bias": True,
            "norm_type": "layernorm",
            "learned_position_embeddings": _req(cfg, "n_positions"),
            "max_position_embeddings": _req(cfg, "n_positions"),
            "dropout": float(cfg.get("resid_pdrop", 0.1) or 0) > 0,
        }
    h = _req(cfg, "hidden_size")
    a = _req(cfg, "num_attention_heads")
    kw: dict[str, Any] = {
        "name": name or str(cfg.get("_name_or_path") or mt),
        "model_type": mt,
        "num_hidden_layers": _req(cfg, "num_hidden_layers"),
        "hidden_size": h,
        "num_attention_heads": a,
        "num_key_value_heads": int(cfg.get("num_key_value_heads") or a),
        "head_dim": int(cfg.get("head_dim") or h // a),
        "intermediate_size": _req(cfg, "intermediate_size"),
        "vocab_size": _req(cfg, "vocab_size"),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", mt in ("gemma", "gemma2"))),
        "attention_bias": bool(cfg.get("attention_bias", mt == "qwen2")),
        "attention_out_bias": bool(cfg.get("attention_bias", False)) and mt not in ("qwen2", "qwen3"),
        "mlp_bias": bool(cfg.get("mlp_bias", False)),
        "max_position_embeddings": int(cfg.get("max_position_embeddings") or 4096),
        "dropout": float(cfg.get("attention_dropout", 0) or 0) > 0,
    }
    if mt == "qwen3":
        kw["qk_norm"] = True
    if mt == "gemma2":
        kw["norms_per_layer"] = 4
    window = cfg.get("sliding_window")
    use_window = cfg.get("use_sliding_window", True)
    if window and use_window:
        kw["sliding_window"] = int(window)
        layers = _layers_from_types(cfg.get("layer_types"))
        if layers is None and mt == "gemma2":  # Gemma-2: even layers local, odd layers global
            layers = tuple(range(0, kw["num_hidden_layers"], 2))
        if layers is None and mt in ("qwen2", "qwen3") and cfg.get("max_window_layers") is not None:
            layers = tuple(range(int(cfg["max_window_layers"]), kw["num_hidden_layers"]))
        kw["sliding_window_layers"] = layers
    if mt == "mixtral" or cfg.get("num_local_experts"):
        kw.update(
            num_experts=_req(cfg, "num_local_experts"),
            num_experts_per_tok=_req(cfg, "num_experts_per_tok"),
            moe_intermediate_size=kw["intermediate_size"],
        )
    if mt in ("deepseek_v2", "deepseek_v3"):
        kw.update(
            num_experts=_req(cfg, "n_routed_experts"),
            num_experts_per_tok=_req(cfg, "num_experts_per_tok"),
            num_shared_experts=int(cfg.get("n_shared_experts") or 0),
            moe_intermediate_size=_req(cfg, "moe_intermediate_size"),
            first_k_dense=int(cfg.get("first_k_dense_replace") or 0),
            kv_lora_rank=_req(cfg, "kv_lora_rank"),
            q_lora_rank=int(cfg.get("q_lora_rank") or 0),
            qk_rope_head_dim=_req(cfg, "qk_rope_head_dim"),
            qk_nope_head_dim=_req(cfg, "qk_nope_head_dim"),
            v_head_dim=_req(cfg, "v_head_dim"),
            head_dim=_req(cfg, "v_head_dim"),
            attention_bias=False,
            attention_out_bias=False,
            router_bias=str(cfg.get("topk_method", "noaux_tc" if mt == "deepseek_v3" else "")) == "noaux_tc",
        )
    return kw


def supported_model_types() -> tuple[str, ...]:
    """Model types whose config layout is mapped explicitly (others are read as Llama-like)."""
    return _SUPPORTED

"""How each mapped family's ``config.json`` fields become `Architecture` fields (beyond the Llama-shaped base).

Each function updates the keyword dict that ``_hf.architecture_kwargs`` built from the common fields.
Sources: the families' ``modeling_*.py`` in transformers 4.57-5.x and the model repositories' own code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._exceptions import InvalidRequestError
from ._shape import ArchFields

__all__ = ["FAMILIES", "falcon", "gpt2_like", "req"]


def req(cfg: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return int(v)
    raise InvalidRequestError(
        f"config.json lacks {' / '.join(keys)}; it is needed to size the model",
        field="model",
        reason=f"missing {keys[0]}",
    )


def gpt2_like(cfg: Mapping[str, Any], name: str | None, mt: str) -> ArchFields:
    """GPT-2 (learned positions), GPT-BigCode (StarCoder; multi-query) and BLOOM (ALiBi, embedding norm)."""
    h = req(cfg, "n_embd", "n_embed", "hidden_size")
    a = req(cfg, "n_head", "num_attention_heads")
    mqa = mt == "gpt_bigcode" and bool(cfg.get("multi_query", True))
    positions = 0 if mt == "bloom" else req(cfg, "n_positions", "max_position_embeddings")
    return {
        "name": name or mt,
        "model_type": mt,
        "num_hidden_layers": req(cfg, "n_layer", "num_hidden_layers"),
        "hidden_size": h,
        "num_attention_heads": a,
        "num_key_value_heads": 1 if mqa else a,
        "head_dim": h // a,
        "intermediate_size": 4 * h if mt == "bloom" else int(cfg.get("n_inner") or 4 * h),
        "vocab_size": req(cfg, "vocab_size"),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True)),
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_gated": False,
        "mlp_bias": True,
        "norm_type": "layernorm",
        "embedding_norm": mt == "bloom",
        "learned_position_embeddings": positions,
        "max_position_embeddings": positions or int(cfg.get("seq_length") or 2048),
        "dropout": float(cfg.get("resid_pdrop", cfg.get("hidden_dropout", 0.1)) or 0) > 0,
    }


def qwen3_moe(cfg: Mapping[str, Any], kw: ArchFields) -> None:
    n, step = kw["num_hidden_layers"], int(cfg.get("decoder_sparse_step") or 1)
    dense_only = {int(i) for i in cfg.get("mlp_only_layers") or ()}
    kw.update({
        "num_experts": req(cfg, "num_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
        "moe_intermediate_size": req(cfg, "moe_intermediate_size"),
        "moe_layer_indices": tuple(i for i in range(n) if i not in dense_only and (i + 1) % step == 0),
    })


def gpt_oss(cfg: Mapping[str, object], kw: ArchFields) -> None:
    # experts: fused gate_up (E, h, 2i) + bias (E, 2i), down (E, i, h) + bias (E, h); router with bias; sinks
    kw.update({
        "num_experts": req(cfg, "num_local_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok", "experts_per_token"),
        "moe_intermediate_size": kw["intermediate_size"],
        "mlp_bias": True,
        "router_bias": True,
        "attention_sinks": True,
        "attention_bias": bool(cfg.get("attention_bias", True)),
        "attention_out_bias": bool(cfg.get("attention_bias", True)),
    })


def llama4_text(cfg: Mapping[str, Any], kw: ArchFields) -> None:
    n = kw["num_hidden_layers"]
    step = int(cfg.get("interleave_moe_layer_step") or 1)
    moe_layers = cfg.get("moe_layers")
    layers = tuple(int(i) for i in moe_layers) if moe_layers is not None else tuple(range(step - 1, n, step))
    kw.update({
        "num_experts": req(cfg, "num_local_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
        "num_shared_experts": 1,
        "moe_intermediate_size": kw["intermediate_size"],  # routed and shared experts use intermediate_size
        "intermediate_size": int(cfg.get("intermediate_size_mlp") or kw["intermediate_size"]),  # dense layers
        "moe_layer_indices": layers,
    })
    chunk = cfg.get("attention_chunk_size")
    if chunk:  # RoPE layers attend within chunks; bounded like a window of the chunk size (NoPE layers: global)
        rope = cfg.get("no_rope_layers")
        if not isinstance(rope, (list, tuple)) or len(rope) != n:
            rope = [int((i + 1) % 4 != 0) for i in range(n)]
        kinds = cfg.get("layer_types")
        if isinstance(kinds, (list, tuple)) and len(kinds) == n:
            rope = [int(t == "chunked_attention") for t in kinds]
        kw["sliding_window"] = int(chunk)
        kw["sliding_window_layers"] = tuple(i for i, uses_rope in enumerate(rope) if uses_rope)


def deepseek(cfg: Mapping[str, Any], kw: ArchFields, mt: str) -> None:
    """DeepSeek-V2/V3 (MLA + MoE); also Kimi-K2 (``kimi_k2``) and DeepSeek-V3.2 (its lightning indexer)."""
    n = kw["num_hidden_layers"]
    first = int(cfg.get("first_k_dense_replace") or 0)
    freq = int(cfg.get("moe_layer_freq") or 1)
    kw.update({
        "num_experts": req(cfg, "n_routed_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
        "num_shared_experts": int(cfg.get("n_shared_experts") or 0),
        "moe_intermediate_size": req(cfg, "moe_intermediate_size"),
        "first_k_dense": first,
        "moe_layer_indices": None if freq == 1 else tuple(i for i in range(first, n) if i % freq == 0),
        "kv_lora_rank": req(cfg, "kv_lora_rank"),
        "q_lora_rank": int(cfg.get("q_lora_rank") or 0),
        "qk_rope_head_dim": req(cfg, "qk_rope_head_dim"),
        "qk_nope_head_dim": req(cfg, "qk_nope_head_dim"),
        "v_head_dim": req(cfg, "v_head_dim"),
        "head_dim": req(cfg, "v_head_dim"),
        "attention_bias": False,
        "attention_out_bias": False,
        "router_bias": str(cfg.get("topk_method", "" if mt == "deepseek_v2" else "noaux_tc")) == "noaux_tc",
        "num_mtp_layers": int(cfg.get("num_nextn_predict_layers") or 0),
    })
    if mt == "deepseek_v32":
        kw.update({"index_n_heads": req(cfg, "index_n_heads"), "index_head_dim": req(cfg, "index_head_dim")})


def phi(cfg: Mapping[str, Any], kw: ArchFields) -> None:
    """Phi-1/1.5/2: one LayerNorm per layer (attention and a GELU MLP in parallel), biases everywhere,
    an lm_head with a bias, partial rotary (no parameters); optional q/k LayerNorms."""
    kw.update({"norm_type": "layernorm", "norms_per_layer": 1, "mlp_gated": False, "mlp_bias": True,
               "attention_bias": True, "attention_out_bias": True, "lm_head_bias": True,
               "qk_norm": bool(cfg.get("qk_layernorm")),
               "dropout": float(cfg.get("resid_pdrop") or 0) > 0})


def gpt_neox(cfg: Mapping[str, object], kw: ArchFields) -> None:
    """GPT-NeoX / Pythia: two LayerNorms per layer (also with the parallel residual), fused qkv with biases,
    a 2-matrix GELU MLP with biases, untied input and output embeddings by default."""
    bias = bool(cfg.get("attention_bias", True))
    kw.update({"norm_type": "layernorm", "mlp_gated": False, "mlp_bias": True, "attention_bias": bias,
               "attention_out_bias": bias,
               "num_key_value_heads": kw["num_attention_heads"],  # multi-head attention, whatever the config says
               "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False))})


def starcoder2(cfg: Mapping[str, object], kw: ArchFields) -> None:
    """StarCoder2: LayerNorm, a 2-matrix GELU MLP (c_fc, c_proj), biases on every projection (``use_bias``),
    GQA, a sliding window on every layer."""
    bias = bool(cfg.get("use_bias", True))
    kw.update({"norm_type": "layernorm", "mlp_gated": False, "mlp_bias": bias, "attention_bias": bias,
               "attention_out_bias": bias,
               "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True))})


def cohere(cfg: Mapping[str, object], kw: ArchFields) -> None:
    """Command-R: one bias-free LayerNorm per layer (parallel attention and SwiGLU MLP), embeddings tied by
    default (the hub configs omit the field), optional q/k LayerNorms over all heads."""
    kw.update({"norm_type": "layernorm_nobias", "norms_per_layer": 1, "qk_norm": bool(cfg.get("use_qk_norm")),
               "qk_norm_full": True, "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True))})


def falcon(cfg: Mapping[str, Any], name: str | None) -> ArchFields:
    """Falcon (RW): fused qkv with one KV head (``multi_query``) or ``num_kv_heads`` groups (the new decoder
    architecture of 40B/180B), a 2-matrix GELU MLP of ``ffn_hidden_size`` (default 4h), LayerNorm: one per
    layer with ``parallel_attn``, two with the new architecture or a sequential block; tied embeddings."""
    h = req(cfg, "hidden_size", "n_embed")
    a = req(cfg, "num_attention_heads", "n_head")
    new = bool(cfg.get("new_decoder_architecture"))
    kv = req(cfg, "num_kv_heads", "n_head_kv") if new else 1 if cfg.get("multi_query", True) else a
    norms = int(cfg.get("num_ln_in_parallel_attn") or 2) if new else 1 if cfg.get("parallel_attn", True) else 2
    bias = bool(cfg.get("bias", False))
    return {
        "name": name or "falcon",
        "model_type": "falcon",
        "num_hidden_layers": req(cfg, "num_hidden_layers", "n_layer"),
        "hidden_size": h,
        "num_attention_heads": a,
        "num_key_value_heads": kv,
        "head_dim": h // a,
        "intermediate_size": int(cfg.get("ffn_hidden_size") or 4 * h),
        "vocab_size": req(cfg, "vocab_size"),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True)),
        "attention_bias": bias,
        "attention_out_bias": bias,
        "mlp_gated": False,
        "mlp_bias": bias,
        "norm_type": "layernorm",
        "norms_per_layer": norms,
        "max_position_embeddings": int(cfg.get("max_position_embeddings") or 2048),
        "dropout": float(cfg.get("hidden_dropout") or 0) > 0,
    }


def glm4_moe(cfg: Mapping[str, Any], kw: ArchFields) -> None:
    """GLM-4.5 / 4.5-Air: GQA with q/k/v biases (none on o_proj), optional per-head q/k RMSNorm, partial rotary
    (no parameters), ``first_k_dense_replace`` dense layers then routed + shared experts with a sigmoid router
    and its score-correction bias; ``num_nextn_predict_layers`` MTP layers ship beside the model."""
    kw.update({
        "num_experts": req(cfg, "n_routed_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
        "num_shared_experts": int(cfg.get("n_shared_experts") or 0),
        "moe_intermediate_size": req(cfg, "moe_intermediate_size"),
        "first_k_dense": int(cfg.get("first_k_dense_replace") or 0),
        "attention_bias": bool(cfg.get("attention_bias", True)),
        "attention_out_bias": False,
        "qk_norm": bool(cfg.get("use_qk_norm")),
        "router_bias": True,
        "num_mtp_layers": int(cfg.get("num_nextn_predict_layers") or 0),
    })


def minimax_m2(cfg: Mapping[str, object], kw: ArchFields) -> None:
    """MiniMax-M2: every layer MoE (``num_local_experts`` of ``intermediate_size``, no shared expert), a sigmoid
    router with a bias, RMSNorm on the whole q and k projections (``qk_norm_type`` per_layer), partial rotary."""
    kw.update({
        "num_experts": req(cfg, "num_local_experts"),
        "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
        "moe_intermediate_size": kw["intermediate_size"],
        "router_bias": bool(cfg.get("use_routing_bias", True)),
        "qk_norm": bool(cfg.get("use_qk_norm", True)),
        "qk_norm_full": str(cfg.get("qk_norm_type", "per_layer")) == "per_layer",
    })


def qwen3_next(cfg: Mapping[str, Any], kw: ArchFields) -> None:
    """Qwen3-Next: three Gated DeltaNet (linear-attention) layers to each gated full-attention layer (its q_proj
    also emits the output gate), per-head q/k RMSNorm, routed experts plus a gated shared expert."""
    n = kw["num_hidden_layers"]
    kinds = cfg.get("layer_types")
    if isinstance(kinds, (list, tuple)) and len(kinds) == n:
        linear = tuple(i for i, t in enumerate(kinds) if t == "linear_attention")
    else:
        every = int(cfg.get("full_attention_interval") or 4)
        linear = tuple(i for i in range(n) if (i + 1) % every)
    qwen3_moe(cfg, kw)
    shared = int(cfg.get("shared_expert_intermediate_size") or 0)
    kw.update({
        "qk_norm": True,
        "attention_bias": bool(cfg.get("attention_bias", False)),
        "attention_out_bias": False,
        "attention_output_gate": True,
        "linear_attention_layers": linear,
        "linear_num_key_heads": req(cfg, "linear_num_key_heads"),
        "linear_num_value_heads": req(cfg, "linear_num_value_heads"),
        "linear_key_head_dim": req(cfg, "linear_key_head_dim"),
        "linear_value_head_dim": req(cfg, "linear_value_head_dim"),
        "linear_conv_kernel_dim": req(cfg, "linear_conv_kernel_dim"),
        "num_shared_experts": 1 if shared else 0,
        "shared_expert_intermediate_size": shared,
        "shared_expert_gate": bool(shared),
    })


FAMILIES: dict[str, Callable[[Mapping[str, Any], ArchFields], None]] = {
    "qwen3_moe": qwen3_moe,
    "gpt_oss": gpt_oss,
    "llama4_text": llama4_text,
    "deepseek_v2": lambda cfg, kw: deepseek(cfg, kw, "deepseek_v2"),
    "deepseek_v3": lambda cfg, kw: deepseek(cfg, kw, "deepseek_v3"),
    "kimi_k2": lambda cfg, kw: deepseek(cfg, kw, "deepseek_v3"),
    "deepseek_v32": lambda cfg, kw: deepseek(cfg, kw, "deepseek_v32"),
    "phi": phi,
    "gpt_neox": gpt_neox,
    "starcoder2": starcoder2,
    "cohere": cohere,
    "glm4_moe": glm4_moe,
    "minimax_m2": minimax_m2,
    "qwen3_next": qwen3_next,
}

"""Translate Hugging Face ``config.json`` fields into `Architecture` keyword arguments.

Each mapped family reads exactly the fields that change its parameter layout. A config that carries
layout fields its family does not map (experts, shared experts, other layer kinds, a vision tower ...)
raises `UnsupportedArchitectureError` instead of being counted as a smaller dense model, and so does an
unknown ``model_type``: its norms, MLP shape, biases and residual form cannot be read from the fields, so
reading it as Llama-shaped would be silently wrong (Phi-2 +30 %, StarCoder2-15B +38 %, issue 30). Pass
``assume="llama"`` to read such a config as Llama-shaped anyway; the assumption is then carried in
``Architecture.assumptions`` and in every estimate's ``warnings``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from .._exceptions import InvalidRequestError
from ._families import FAMILIES, falcon, gpt2_like, req
from ._shape import ArchFields

__all__ = ["ArchitectureWarning", "UnsupportedArchitectureError", "architecture_kwargs", "supported_model_types"]


class UnsupportedArchitectureError(InvalidRequestError):
    """A config describes a layout (experts, hybrid layers, ...) that the estimator cannot count exactly."""


class ArchitectureWarning(UserWarning):
    """An architecture was read with an assumption (unknown ``model_type``, text decoder only, ...)."""


# Fields that change which weights exist. A family may only carry the ones it maps (``_HANDLED``).
_LAYOUT_FIELDS = (
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "n_shared_experts",
    "num_shared_experts",
    "shared_expert_intermediate_size",
    "moe_intermediate_size",
    "moe_layer_freq",
    "first_k_dense_replace",
    "decoder_sparse_step",
    "mlp_only_layers",
    "interleave_moe_layer_step",
    "moe_layers",
    "intermediate_size_mlp",
    "kv_lora_rank",
    "q_lora_rank",
    "attention_chunk_size",
    "no_rope_layers",
    "text_config",
    "vision_config",
    "audio_config",
    "full_attn_interval",
    "linear_num_value_heads",
    "hybrid_override_pattern",
    "attn_layer_indices",
    "mamba_d_state",
    "num_nextn_predict_layers",
    "attn_type_list",
)
_LAYER_KINDS = ("full_attention", "sliding_attention")
_DEEPSEEK = frozenset(
    {
        "n_routed_experts",
        "n_shared_experts",
        "moe_intermediate_size",
        "moe_layer_freq",
        "first_k_dense_replace",
        "kv_lora_rank",
        "q_lora_rank",
        "num_nextn_predict_layers",  # multi-token-prediction modules: counted apart (Architecture.mtp_params)
    }
)
_QWEN_MOE = frozenset({"num_experts", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers"})
_HANDLED: dict[str, frozenset[str]] = {
    "llama": frozenset(),
    "mistral": frozenset(),
    "qwen2": frozenset(),
    "qwen3": frozenset(),
    "gemma": frozenset(),
    "gemma2": frozenset(),
    "gemma3_text": frozenset(),
    "phi3": frozenset(),
    "gpt2": frozenset(),
    "gpt_bigcode": frozenset(),
    "bloom": frozenset(),
    "mixtral": frozenset({"num_local_experts"}),
    "qwen3_moe": _QWEN_MOE,
    "gpt_oss": frozenset({"num_local_experts"}),
    "llama4_text": frozenset(
        {
            "num_local_experts",
            "interleave_moe_layer_step",
            "moe_layers",
            "intermediate_size_mlp",
            "attention_chunk_size",
            "no_rope_layers",
        }
    ),
    "deepseek_v2": _DEEPSEEK,
    "deepseek_v3": _DEEPSEEK,
    "kimi_k2": _DEEPSEEK,
    "deepseek_v32": _DEEPSEEK,
    "phi": frozenset(),
    "gpt_neox": frozenset(),
    "starcoder2": frozenset(),
    "cohere": frozenset(),
    "falcon": frozenset(),
    "smollm3": frozenset({"no_rope_layers"}),  # NoPE layers change no weight
    "glm4_moe": frozenset(
        {"n_routed_experts", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace",
         "num_nextn_predict_layers"}
    ),
    "minimax_m2": frozenset({"num_local_experts"}),
    "qwen3_next": _QWEN_MOE | {"shared_expert_intermediate_size", "linear_num_value_heads"},
}
# layer kinds a family maps beyond full and sliding attention
_EXTRA_KINDS = {"llama4_text": ("chunked_attention",), "deepseek_v32": ("indexed_attention",),
                "qwen3_next": ("linear_attention",)}
# Multimodal wrappers whose ``text_config`` is a mapped decoder: only the decoder is counted.
_TEXT_OF = {"llama4": "llama4_text", "gemma3": "gemma3_text", "mistral3": "mistral"}
# The hub's gemma-3 config.json files list only the text fields that differ from transformers'
# Gemma3TextConfig defaults; these are those defaults (transformers 4.57 configuration_gemma3.py).
_TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
        "tie_word_embeddings": True,
    },
}


def _meaningful(key: str, value: object, mt: str) -> bool:
    if key == "layer_types":
        kinds = (*_LAYER_KINDS, *_EXTRA_KINDS.get(mt, ()))
        return isinstance(value, (list, tuple)) and any(t not in kinds for t in value)
    if key == "attn_type_list":  # MiniMax: 0 marks a linear-attention (lightning) layer
        return isinstance(value, (list, tuple)) and any(t != 1 for t in value)
    return value not in (None, 0, False, "", [], {}, ())


def _check_layout(cfg: Mapping[str, object], mt: str) -> None:
    """Raise when ``cfg`` carries layout fields that family ``mt`` (None: unknown) does not map."""
    handled = _HANDLED.get(mt, frozenset())
    stray = [k for k in (*_LAYOUT_FIELDS, "layer_types") if k not in handled and _meaningful(k, cfg.get(k), mt)]
    if not stray:
        return
    what = f"model_type {mt!r}" if mt in _HANDLED else f"unmapped model_type {mt!r}"
    raise UnsupportedArchitectureError(
        f"config.json ({what}) has layout fields the estimator does not map: {', '.join(stray)}; "
        f"counting it as a dense model would be wrong. Mapped model types: {', '.join(supported_model_types())}. "
        f"Pass an Architecture built by hand for other layouts",
        field="model",
        reason="unsupported architecture",
    )


def _layers_from_types(layer_types: object) -> tuple[int, ...] | None:
    if not isinstance(layer_types, (list, tuple)):
        return None
    return tuple(i for i, t in enumerate(layer_types) if t == "sliding_attention")


def _sliding_layers(cfg: Mapping[str, Any], mt: str, n: int) -> tuple[int, ...] | None:
    layers = _layers_from_types(cfg.get("layer_types"))
    if layers is not None:
        return layers
    if mt == "gemma2":  # Gemma-2: even layers local, odd layers global
        return tuple(range(0, n, 2))
    if mt == "gemma3_text":  # Gemma 3: every sliding_window_pattern-th layer is global
        pattern = int(cfg.get("sliding_window_pattern") or 6)
        return tuple(i for i in range(n) if (i + 1) % pattern)
    if mt == "gpt_oss":  # alternating sliding (even) and full (odd) layers
        return tuple(range(0, n, 2))
    if mt in ("qwen2", "qwen3", "qwen3_moe") and cfg.get("max_window_layers") is not None:
        return tuple(range(int(cfg["max_window_layers"]), n))
    return None


# Fields a Llama-shaped reading uses or that do not change the weights; anything else an unmapped config
# carries is named in the refusal, so the message says what the estimator would have ignored.
_PLAIN_FIELDS = frozenset({
    "model_type", "architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size", "tie_word_embeddings",
    "max_position_embeddings", "rope_theta", "rope_scaling", "rms_norm_eps", "torch_dtype", "dtype",
    "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id", "use_cache", "initializer_range",
    "attention_dropout", "hidden_act", "_name_or_path", "attention_bias", "mlp_bias", "pretraining_tp",
    "quantization_config", "auto_map", "sliding_window", "use_sliding_window", "max_window_layers",
})


def _refuse_model_type(cfg: Mapping[str, object], mt: str) -> UnsupportedArchitectureError:
    extra = sorted(k for k in cfg if k not in _PLAIN_FIELDS and _meaningful(k, cfg.get(k), mt))
    fields = f"; fields it would ignore: {', '.join(extra[:12])}{' ...' if len(extra) > 12 else ''}" if extra else ""
    return UnsupportedArchitectureError(
        f"config.json has an unmapped model_type {mt or '(missing)'!r}: its norms, MLP shape, biases and "
        f"residual form cannot be read from the fields, and reading it as Llama-shaped can be 30 % off{fields}. "
        f"Mapped model types: {', '.join(supported_model_types())}. Pass an Architecture built by hand, or "
        f"from_hf_config(..., assume='llama') to accept a Llama-shaped reading (recorded as a warning)",
        field="model",
        reason="unsupported model_type",
    )


def architecture_kwargs(cfg: Mapping[str, Any], name: str | None, assume: str | None = None) -> ArchFields:
    """Map one config dict to Architecture fields.

    Raises `UnsupportedArchitectureError` for layouts that cannot be counted exactly and for an unmapped
    ``model_type`` (unless ``assume="llama"``). Every assumption made (a Llama-shaped reading, the text
    decoder only of a multimodal config) is warned (`ArchitectureWarning`) and listed under ``assumptions``.
    """
    mt = str(cfg.get("model_type") or "")
    if mt in _TEXT_OF and isinstance(cfg.get("text_config"), Mapping):
        text = dict(cfg["text_config"])
        text.setdefault("model_type", _TEXT_OF[mt])
        for k, v in _TEXT_DEFAULTS.get(str(text["model_type"]), {}).items():
            text.setdefault(k, v)
        for k in ("tie_word_embeddings", "_name_or_path"):
            if k in cfg and k not in text:
                text[k] = cfg[k]
        note = f"{mt} config: only the text decoder is counted; the vision encoder and projector are not"
        warnings.warn(note, ArchitectureWarning, stacklevel=3)
        inner = architecture_kwargs(text, name, assume)
        inner["assumptions"] = (note, *inner.get("assumptions", ()))
        return inner
    assumed: tuple[str, ...] = ()
    if mt not in _HANDLED:
        _check_layout(cfg, mt)  # experts, hybrid layers ...: the layout fields are named first
        if assume != "llama":
            raise _refuse_model_type(cfg, mt)
        note = (f"model_type {mt or '(missing)'!r} is not mapped; read as a Llama-shaped dense model "
                "(gated MLP, RMSNorm, no biases) because assume='llama' was passed: the count may be wrong")
        warnings.warn(note, ArchitectureWarning, stacklevel=3)
        assumed = (note,)
        mt = mt or "llama"
    else:
        _check_layout(cfg, mt)
    if mt in ("gpt2", "gpt_bigcode", "bloom"):
        return gpt2_like(cfg, name, mt)
    if mt == "falcon":
        return falcon(cfg, name)
    h = req(cfg, "hidden_size")
    a = req(cfg, "num_attention_heads")
    qwen = mt in ("qwen2", "qwen3", "qwen3_moe")
    kw: ArchFields = {
        "name": name or str(cfg.get("_name_or_path") or mt),
        "model_type": mt,
        "num_hidden_layers": req(cfg, "num_hidden_layers"),
        "hidden_size": h,
        "num_attention_heads": a,
        "num_key_value_heads": int(cfg.get("num_key_value_heads") or a),
        "head_dim": int(cfg.get("head_dim") or h // a),
        "intermediate_size": req(cfg, "intermediate_size"),
        "vocab_size": req(cfg, "vocab_size"),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", mt.startswith("gemma"))),
        "attention_bias": bool(cfg.get("attention_bias", mt == "qwen2")),
        "attention_out_bias": bool(cfg.get("attention_bias", False)) and not qwen,
        "mlp_bias": bool(cfg.get("mlp_bias", False)),
        "max_position_embeddings": int(cfg.get("max_position_embeddings") or 4096),
        "dropout": float(cfg.get("attention_dropout", 0) or 0) > 0,
        "assumptions": assumed,
    }
    if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
        kw["qk_norm"] = True
    if mt in ("gemma2", "gemma3_text"):
        kw["norms_per_layer"] = 4
    if mt == "mixtral":
        kw.update({
            "num_experts": req(cfg, "num_local_experts"),
            "num_experts_per_tok": req(cfg, "num_experts_per_tok"),
            "moe_intermediate_size": kw["intermediate_size"],
        })
    family = FAMILIES.get(mt)
    if family is not None:
        family(cfg, kw)
    window = cfg.get("sliding_window")
    if window and cfg.get("use_sliding_window", True) and "sliding_window" not in kw:
        kw["sliding_window"] = int(window)
        kw["sliding_window_layers"] = _sliding_layers(cfg, mt, kw["num_hidden_layers"])
    return kw


def supported_model_types() -> tuple[str, ...]:
    """Model types whose config layout is mapped explicitly (multimodal wrappers count their text decoder)."""
    return (*_HANDLED, *_TEXT_OF)

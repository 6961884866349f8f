"""Decoder-only transformer shapes: parameter counts and KV-cache sizes from config fields."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import InvalidRequestError

__all__ = ["Architecture", "WeightMatrix", "dtype_bytes"]

_DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "float32": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "float8": 1,
    "int8": 1,
    "auto": 2,
}


def dtype_bytes(dtype: str | float | int) -> float:
    """Bytes per element for a dtype name (``"bf16"``, ``"fp8"``, ...) or a number of bytes."""
    if isinstance(dtype, bool):
        raise InvalidRequestError("dtype must be a name or a byte count", field="dtype", reason="bool")
    if isinstance(dtype, (int, float)):
        if dtype <= 0:
            raise InvalidRequestError(f"dtype byte count must be > 0, got {dtype}", field="dtype")
        return float(dtype)
    key = dtype.strip().lower().replace("-", "_")
    if key not in _DTYPE_BYTES:
        raise InvalidRequestError(
            f"unknown dtype {dtype!r}; use one of {sorted(set(_DTYPE_BYTES))} or a number of bytes",
            field="dtype",
            reason="unknown dtype",
        )
    return _DTYPE_BYTES[key]


@dataclass(frozen=True)
class WeightMatrix:
    """One kind of 2-D weight: ``rows x cols`` (in x out features), present ``count`` times in the model."""

    name: str
    rows: int
    cols: int
    count: int
    quantizable: bool = True  # False for embeddings / lm_head / MoE routers

    @property
    def params(self) -> int:
        return self.rows * self.cols * self.count


@dataclass(frozen=True)
class Architecture:
    """Shape of a decoder-only transformer, enough to count parameters and KV-cache bytes exactly.

    Field names follow Hugging Face ``config.json``. MoE, MLA (DeepSeek) and sliding-window layers
    are optional. Build one from a config with `from_hf_config`.
    """

    name: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # biases on q/k/v projections
    attention_out_bias: bool = False  # bias on the output projection
    mlp_gated: bool = True  # SwiGLU/GeGLU (gate, up, down) vs plain 2-matrix MLP
    mlp_bias: bool = False
    norm_type: str = "rmsnorm"  # "layernorm" carries a bias vector too
    norms_per_layer: int = 2
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3, Gemma 3)
    attention_sinks: bool = False  # one learned sink logit per attention head (gpt-oss)
    embedding_norm: bool = False  # a LayerNorm right after the token embedding (BLOOM)
    learned_position_embeddings: int = 0  # rows of a learned position table (GPT-2)
    dropout: bool = False  # activations keep dropout masks in training (GPT-2 era)
    # mixture of experts
    num_experts: int = 0
    num_experts_per_tok: int = 0
    num_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_k_dense: int = 0  # the first k layers use a dense MLP
    moe_layer_indices: tuple[int, ...] | None = None  # explicit MoE layers (interleaved MoE); overrides first_k_dense
    router_bias: bool = False  # per-expert score-correction bias (DeepSeek-V3 noaux_tc routing)
    # multi-head latent attention (DeepSeek-V2/V3)
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # sliding-window attention
    sliding_window: int | None = None
    sliding_window_layers: tuple[int, ...] | None = None  # None with a window: every layer is windowed
    max_position_embeddings: int = 4096
    model_type: str = "llama"
    #: what the reading of a config assumed (a Llama-shaped reading, the text decoder only ...); every
    #: estimate built on this architecture repeats these in its ``warnings``
    assumptions: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        for f in (
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "vocab_size",
        ):
            v = getattr(self, f)
            if not isinstance(v, int) or v <= 0:
                raise InvalidRequestError(f"Architecture.{f} must be a positive int, got {v!r}", field=f)
        if self.num_experts and not 0 < self.num_experts_per_tok <= self.num_experts:
            raise InvalidRequestError("num_experts_per_tok must be in 1..num_experts", field="num_experts_per_tok")
        if self.moe_layer_indices is not None and (
            len(set(self.moe_layer_indices)) != len(self.moe_layer_indices)
            or any(not 0 <= i < self.num_hidden_layers for i in self.moe_layer_indices)
        ):
            raise InvalidRequestError(
                "moe_layer_indices must be distinct layer indices in 0..num_hidden_layers-1",
                field="moe_layer_indices",
            )

    # ------------------------------------------------------------------ structure
    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (DeepSeek-V2/V3)."""
        return self.kv_lora_rank > 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def num_moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        if self.moe_layer_indices is not None:
            return len(self.moe_layer_indices)
        return max(0, self.num_hidden_layers - self.first_k_dense)

    @property
    def num_dense_layers(self) -> int:
        return self.num_hidden_layers - self.num_moe_layers

    def _attention_matrices(self) -> list[WeightMatrix]:
        L, h, a = self.num_hidden_layers, self.hidden_size, self.num_attention_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            out = []
            if self.q_lora_rank:
                out += [
                    WeightMatrix("q_a_proj", h, self.q_lora_rank, L),
                    WeightMatrix("q_b_proj", self.q_lora_rank, a * qk, L),
                ]
            else:
                out.append(WeightMatrix("q_proj", h, a * qk, L))
            out += [
                WeightMatrix("kv_a_proj_with_mqa", h, self.kv_lora_rank + self.qk_rope_head_dim, L),
                WeightMatrix("kv_b_proj", self.kv_lora_rank, a * (self.qk_nope_head_dim + self.v_head_dim), L),
                WeightMatrix("o_proj", a * self.v_head_dim, h, L),
            ]
            return out
        d, kv = self.head_dim, self.num_key_value_heads
        return [
            WeightMatrix("q_proj", h, a * d, L),
            WeightMatrix("k_proj", h, kv * d, L),
            WeightMatrix("v_proj", h, kv * d, L),
            WeightMatrix("o_proj", a * d, h, L),
        ]

    def _mlp_matrices(self, inter: int, count: int, prefix: str) -> list[WeightMatrix]:
        if count == 0 or inter == 0:
            return []
        h = self.hidden_size
        if self.mlp_gated:
            return [
                WeightMatrix(f"{prefix}gate_proj", h, inter, count),
                WeightMatrix(f"{prefix}up_proj", h, inter, count),
                WeightMatrix(f"{prefix}down_proj", inter, h, count),
            ]
        return [
            WeightMatrix(f"{prefix}fc_in", h, inter, count),
            WeightMatrix(f"{prefix}fc_out", inter, h, count),
        ]

    def weight_matrices(self) -> list[WeightMatrix]:
        """Every 2-D weight kind with its shape and multiplicity (embeddings and lm_head included)."""
        h = self.hidden_size
        mats = [WeightMatrix("embed_tokens", self.vocab_size, h, 1, quantizable=False)]
        if self.learned_position_embeddings:
            mats.append(WeightMatrix("embed_positions", self.learned_position_embeddings, h, 1, False))
        mats += self._attention_matrices()
        mats += self._mlp_matrices(self.intermediate_size, self.num_dense_layers, "")
        if self.is_moe:
            m = self.num_moe_layers
            mats += self._mlp_matrices(self.moe_intermediate_size, m * self.num_experts, "experts.")
            mats += self._mlp_matrices(self.moe_intermediate_size, m * self.num_shared_experts, "shared_experts.")
            mats.append(WeightMatrix("router", h, self.num_experts, m, quantizable=False))
        if not self.tie_word_embeddings:
            mats.append(WeightMatrix("lm_head", h, self.vocab_size, 1, quantizable=False))
        return mats

    def _vector_params(self) -> int:
        """Norm weights and biases (1-D parameters)."""
        L, h, a = self.num_hidden_layers, self.hidden_size, self.num_attention_heads
        per_norm = 2 * h if self.norm_type == "layernorm" else h
        n = L * self.norms_per_layer * per_norm + per_norm  # + final norm
        if self.embedding_norm:
            n += per_norm
        if self.attention_sinks:
            n += L * a
        if self.is_mla:
            lat = 2 if self.norm_type == "layernorm" else 1
            n += L * lat * (self.kv_lora_rank + self.q_lora_rank)
        if self.qk_norm:
            n += L * 2 * self.head_dim
        if self.attention_bias and not self.is_mla:
            n += L * (a + 2 * self.num_key_value_heads) * self.head_dim
        if self.attention_out_bias:
            n += L * h
        if self.router_bias:
            n += self.num_moe_layers * self.num_experts
        if self.mlp_bias:

            def mlp_b(inter: int) -> int:
                return (2 * inter if self.mlp_gated else inter) + h

            n += self.num_dense_layers * mlp_b(self.intermediate_size)
            n += self.num_moe_layers * (self.num_experts + self.num_shared_experts) * mlp_b(self.moe_intermediate_size)
        return n

    def param_groups(self) -> dict[str, int]:
        """Parameter counts split by how quantizers treat them.

        Keys: ``embedding`` (token + position tables), ``lm_head`` (0 when tied), ``linear``
        (quantizable projection/expert matrices), ``other`` (norms, biases, MoE routers).
        """
        g = {"embedding": 0, "lm_head": 0, "linear": 0, "other": self._vector_params()}
        for m in self.weight_matrices():
            if m.name.startswith("embed_"):
                g["embedding"] += m.params
            elif m.name == "lm_head":
                g["lm_head"] += m.params
            elif m.quantizable:
                g["linear"] += m.params
            else:
                g["other"] += m.params
        return g

    @property
    def num_params(self) -> int:
        """Total parameter count (tied embeddings counted once; DeepSeek MTP heads excluded)."""
        return sum(self.param_groups().values())

    @property
    def num_active_params(self) -> int:
        """Parameters used per token: all, minus the routed experts a token does not visit."""
        if not self.is_moe:
            return self.num_params
        per_expert = sum(m.rows * m.cols for m in self._mlp_matrices(self.moe_intermediate_size, 1, ""))
        if self.mlp_bias:
            per_expert += (2 if self.mlp_gated else 1) * self.moe_intermediate_size + self.hidden_size
        idle = (self.num_experts - self.num_experts_per_tok) * per_expert * self.num_moe_layers
        return self.num_params - idle

    def routed_expert_params(self) -> int:
        """Parameters of the routed experts' projection matrices (what MXFP4 checkpoints quantize)."""
        return sum(m.params for m in self.weight_matrices() if m.name.startswith("experts."))

    @property
    def largest_layer_params(self) -> int:
        """Parameters of the largest single weight tensor (DeepSpeed's ``largest_layer_params``)."""
        return max(m.rows * m.cols for m in self.weight_matrices())

    # ------------------------------------------------------------------ KV cache
    def kv_heads_per_gpu(self, tensor_parallel: int = 1) -> int:
        """KV heads stored per GPU: ``max(1, n_kv / tp)`` (heads replicate when tp > n_kv); 1 for MLA."""
        if self.is_mla:
            return 1
        return max(1, math.ceil(self.num_key_value_heads / tensor_parallel))

    def kv_cache_bytes_per_token_per_layer(self, dtype: str | float = "bf16", tensor_parallel: int = 1) -> float:
        """Bytes one token adds to one attention layer's cache on one GPU."""
        b = dtype_bytes(dtype)
        if self.is_mla:  # compressed latent + decoupled rope key, replicated on every TP rank
            return (self.kv_lora_rank + self.qk_rope_head_dim) * b
        return 2 * self.kv_heads_per_gpu(tensor_parallel) * self.head_dim * b

    def kv_cache_bytes_per_token(self, dtype: str | float = "bf16") -> int:
        """KV-cache bytes one token occupies across all layers (whole model, no window cap).

        ``2 x layers x kv_heads x head_dim x bytes``; MLA stores ``kv_lora_rank + qk_rope_head_dim`` per layer.
        """
        return int(self.num_hidden_layers * self.kv_cache_bytes_per_token_per_layer(dtype))

    def windowed_layers(self) -> tuple[int, ...]:
        """Indices of the layers that attend over a sliding window (empty when none)."""
        if not self.sliding_window:
            return ()
        if self.sliding_window_layers is None:
            return tuple(range(self.num_hidden_layers))
        return self.sliding_window_layers

    def kv_cache_bytes(
        self, context: int, batch: int = 1, dtype: str | float = "bf16", tensor_parallel: int = 1
    ) -> int:
        """Per-GPU KV-cache bytes for ``batch`` sequences of ``context`` tokens.

        Sliding-window layers retain at most ``sliding_window - 1`` tokens per sequence between steps
        (the new token completes the window), as Hugging Face's sliding-window cache and vLLM do.
        """
        per_layer = self.kv_cache_bytes_per_token_per_layer(dtype, tensor_parallel)
        win = self.windowed_layers()
        capped = min(context, (self.sliding_window or context + 1) - 1)
        tokens = (self.num_hidden_layers - len(win)) * context + len(win) * capped
        return int(per_layer * tokens * batch)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_hf_config(
        cls, path_or_dict: str | Path | Mapping[str, Any], name: str | None = None, *, assume: str | None = None
    ) -> Architecture:
        """Build from a Hugging Face ``config.json`` (a path, a directory holding one, or a dict).

        An unmapped ``model_type`` raises `UnsupportedArchitectureError`; ``assume="llama"`` reads it as a
        Llama-shaped dense model instead and records that in ``assumptions`` (and every estimate's warnings).
        """
        if assume not in (None, "llama"):
            raise InvalidRequestError(f"assume must be None or 'llama', got {assume!r}", field="assume")
        from ._hf import architecture_kwargs

        if isinstance(path_or_dict, Mapping):
            cfg: Mapping[str, Any] = path_or_dict
        else:
            p = Path(path_or_dict)
            if p.is_dir():
                p = p / "config.json"
            try:
                cfg = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InvalidRequestError(
                    f"cannot read a config.json from {str(path_or_dict)!r}: {exc}; pass a readable file or a dict",
                    field="model",
                    reason="unreadable config",
                ) from exc
            name = name or p.parent.name or p.stem
        return cls(**architecture_kwargs(cfg, name, assume))

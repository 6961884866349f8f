"""Decoder-only transformer shapes: parameter counts and KV-cache sizes from config fields."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._exceptions import InvalidRequestError
from ._params import WeightMatrix, linear_state_elements, mlp_matrices, mtp_params, vector_params, weight_matrices

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
class Architecture:
    """Shape of a decoder-only transformer, enough to count parameters and KV-cache bytes exactly.

    Field names follow Hugging Face ``config.json``. MoE, MLA (DeepSeek, with V3.2's indexer), sliding-window
    and linear-attention layers (Qwen3-Next: a fixed per-sequence state, `linear_state_bytes`) are optional.
    Build one from a config with `from_hf_config`.
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
    lm_head_bias: bool = False  # Phi
    qk_norm_full: bool = False  # q/k norms over all heads (a*d + kv*d weights: Cohere, MiniMax-M2), not per head
    attention_output_gate: bool = False  # q_proj also emits a sigmoid output gate (Qwen3-Next): 2 * a * d outputs
    shared_expert_intermediate_size: int = 0  # 0: shared experts use moe_intermediate_size
    shared_expert_gate: bool = False  # a Linear(h, 1) gate on the shared expert (Qwen3-Next)
    # DeepSeek-V3.2 lightning indexer (per MLA layer)
    index_n_heads: int = 0
    index_head_dim: int = 0
    # linear-attention layers (Qwen3-Next Gated DeltaNet): a fixed recurrent state per sequence, no KV cache
    linear_attention_layers: tuple[int, ...] = ()
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 4
    num_mtp_layers: int = 0  # multi-token-prediction modules the checkpoint ships (not in num_params)
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

    @property
    def num_attention_layers(self) -> int:
        """Layers with softmax attention (and a KV cache): all but the linear-attention layers."""
        return self.num_hidden_layers - len(self.linear_attention_layers)

    def _mlp_matrices(self, inter: int, count: int, prefix: str) -> list[WeightMatrix]:
        return mlp_matrices(self, inter, count, prefix)

    def weight_matrices(self) -> list[WeightMatrix]:
        """Every 2-D weight kind with its shape and multiplicity (embeddings and lm_head included)."""
        return weight_matrices(self)

    def _vector_params(self) -> int:
        """Norm weights and biases (1-D parameters)."""
        return vector_params(self)

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
        """Total parameter count (tied embeddings counted once; multi-token-prediction modules excluded)."""
        return sum(self.param_groups().values())

    @property
    def mtp_params(self) -> int:
        """Parameters of the multi-token-prediction modules the checkpoint also ships (0 when none).

        Not part of ``num_params`` (vLLM and SGLang load them only for speculative decoding)."""
        if not self.num_mtp_layers:
            return 0
        from dataclasses import replace

        one = replace(self, num_hidden_layers=1, first_k_dense=0, moe_layer_indices=None, linear_attention_layers=(),
                      sliding_window_layers=None, num_mtp_layers=0)
        body = one.num_params - one.param_groups()["embedding"] - one.param_groups()["lm_head"] - one._final_norm()
        return mtp_params(self, body)

    def _final_norm(self) -> int:
        return (2 if self.norm_type == "layernorm" else 1) * self.hidden_size

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
        """Bytes one token adds to one attention layer's cache on one GPU.

        DeepSeek-V3.2 adds its indexer's key: ``index_head_dim`` fp8 bytes and one fp32 scale, whatever ``dtype``.
        """
        b = dtype_bytes(dtype)
        if self.is_mla:  # compressed latent + decoupled rope key, replicated on every TP rank
            index = self.index_head_dim + 4 if self.index_n_heads else 0
            return (self.kv_lora_rank + self.qk_rope_head_dim) * b + index
        return 2 * self.kv_heads_per_gpu(tensor_parallel) * self.head_dim * b

    def kv_cache_bytes_per_token(self, dtype: str | float = "bf16") -> int:
        """KV-cache bytes one token occupies across the attention layers (whole model, no window cap).

        ``2 x layers x kv_heads x head_dim x bytes``; MLA stores ``kv_lora_rank + qk_rope_head_dim`` per layer.
        Linear-attention layers hold no per-token cache (see `linear_state_bytes`).
        """
        return int(self.num_attention_layers * self.kv_cache_bytes_per_token_per_layer(dtype))

    def linear_state_bytes(self, batch: int = 1, dtype: str | float = "bf16", tensor_parallel: int = 1) -> int:
        """Per-GPU bytes of the linear-attention layers' fixed state for ``batch`` sequences (0 without them).

        Each sequence holds a conv window and a ``value_heads x key_dim x value_dim`` recurrent state per
        layer, whatever its length; heads shard over TP. vLLM keeps it in the model dtype (its
        ``mamba_cache_dtype="auto"``), so an fp8 KV cache leaves the state at 16 bits.
        """
        if not self.linear_attention_layers:
            return 0
        heads_tp = max(1, min(tensor_parallel, self.linear_num_key_heads))
        per_seq = len(self.linear_attention_layers) * linear_state_elements(self) * max(2.0, dtype_bytes(dtype))
        return int(per_seq * batch / heads_tp)

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
        tokens = (self.num_attention_layers - len(win)) * context + len(win) * capped
        return int(per_layer * tokens * batch) + self.linear_state_bytes(batch, dtype, tensor_parallel)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_hf_config(
        cls, path_or_dict: str | Path | Mapping[str, object], name: str | None = None, *, assume: str | None = None
    ) -> Architecture:
        """Build from a Hugging Face ``config.json`` (a path, a directory holding one, or a dict).

        An unmapped ``model_type`` raises `UnsupportedArchitectureError`; ``assume="llama"`` reads it as a
        Llama-shaped dense model instead and records that in ``assumptions`` (and every estimate's warnings).
        """
        if assume not in (None, "llama"):
            raise InvalidRequestError(f"assume must be None or 'llama', got {assume!r}", field="assume")
        from ._hf import architecture_kwargs

        if isinstance(path_or_dict, Mapping):
            cfg: Mapping[str, object] = path_or_dict
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

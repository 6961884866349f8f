"""`ArchShape`: the fields of an `Architecture` that its parameter layout reads (`_params`, `_checkpoint`);
`ArchFields`: the keyword arguments a config reader builds for it (`_hf`, `_families`).

A Protocol, so that those modules type their argument without importing `_architecture` (which imports them).
"""

from __future__ import annotations

from typing import Protocol

from typing_extensions import Required, TypedDict

__all__ = ["ArchFields", "ArchShape"]


class ArchShape(Protocol):
    """The read-only shape fields of a decoder-only transformer (see `Architecture` for their meaning)."""

    @property
    def attention_bias(self) -> bool: ...
    @property
    def attention_out_bias(self) -> bool: ...
    @property
    def attention_output_gate(self) -> bool: ...
    @property
    def attention_sinks(self) -> bool: ...
    @property
    def embedding_norm(self) -> bool: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def index_head_dim(self) -> int: ...
    @property
    def index_n_heads(self) -> int: ...
    @property
    def intermediate_size(self) -> int: ...
    @property
    def is_mla(self) -> bool: ...
    @property
    def is_moe(self) -> bool: ...
    @property
    def kv_lora_rank(self) -> int: ...
    @property
    def learned_position_embeddings(self) -> int: ...
    @property
    def linear_attention_layers(self) -> tuple[int, ...]: ...
    @property
    def linear_conv_kernel_dim(self) -> int: ...
    @property
    def linear_key_head_dim(self) -> int: ...
    @property
    def linear_num_key_heads(self) -> int: ...
    @property
    def linear_num_value_heads(self) -> int: ...
    @property
    def linear_value_head_dim(self) -> int: ...
    @property
    def lm_head_bias(self) -> bool: ...
    @property
    def mlp_bias(self) -> bool: ...
    @property
    def mlp_gated(self) -> bool: ...
    @property
    def moe_intermediate_size(self) -> int: ...
    @property
    def norm_type(self) -> str: ...
    @property
    def norms_per_layer(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def num_attention_layers(self) -> int: ...
    @property
    def num_dense_layers(self) -> int: ...
    @property
    def num_experts(self) -> int: ...
    @property
    def num_hidden_layers(self) -> int: ...
    @property
    def num_key_value_heads(self) -> int: ...
    @property
    def num_moe_layers(self) -> int: ...
    @property
    def num_mtp_layers(self) -> int: ...
    @property
    def num_shared_experts(self) -> int: ...
    @property
    def q_lora_rank(self) -> int: ...
    @property
    def qk_nope_head_dim(self) -> int: ...
    @property
    def qk_norm(self) -> bool: ...
    @property
    def qk_norm_full(self) -> bool: ...
    @property
    def qk_rope_head_dim(self) -> int: ...
    @property
    def router_bias(self) -> bool: ...
    @property
    def shared_expert_gate(self) -> bool: ...
    @property
    def shared_expert_intermediate_size(self) -> int: ...
    @property
    def tie_word_embeddings(self) -> bool: ...
    @property
    def v_head_dim(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...


class ArchFields(TypedDict, total=False):
    """The keyword arguments of `Architecture` that `_hf.architecture_kwargs` and the `_families` readers
    build from a config (the fields without a default are required)."""

    name: Required[str]
    num_hidden_layers: Required[int]
    hidden_size: Required[int]
    num_attention_heads: Required[int]
    num_key_value_heads: Required[int]
    head_dim: Required[int]
    intermediate_size: Required[int]
    vocab_size: Required[int]
    tie_word_embeddings: bool
    attention_bias: bool
    attention_out_bias: bool
    mlp_gated: bool
    mlp_bias: bool
    norm_type: str
    norms_per_layer: int
    qk_norm: bool
    attention_sinks: bool
    embedding_norm: bool
    learned_position_embeddings: int
    dropout: bool
    num_experts: int
    num_experts_per_tok: int
    num_shared_experts: int
    moe_intermediate_size: int
    first_k_dense: int
    moe_layer_indices: tuple[int, ...] | None
    router_bias: bool
    kv_lora_rank: int
    q_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    sliding_window: int | None
    sliding_window_layers: tuple[int, ...] | None
    max_position_embeddings: int
    model_type: str
    lm_head_bias: bool
    qk_norm_full: bool
    attention_output_gate: bool
    shared_expert_intermediate_size: int
    shared_expert_gate: bool
    index_n_heads: int
    index_head_dim: int
    linear_attention_layers: tuple[int, ...]
    linear_num_key_heads: int
    linear_num_value_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    num_mtp_layers: int
    assumptions: tuple[str, ...]

"""Parameter layout of an `Architecture`: its 2-D weights and its 1-D parameters (norms, biases, gates).

Functions of an architecture, typed by the `ArchShape` protocol (this module cannot import ``_architecture``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._shape import ArchShape

__all__ = ["WeightMatrix", "linear_state_elements", "mtp_params", "vector_params", "weight_matrices"]


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


def _mla(arch: ArchShape, L: int) -> list[WeightMatrix]:
    h, a = arch.hidden_size, arch.num_attention_heads
    qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
    out = []
    if arch.q_lora_rank:
        out += [WeightMatrix("q_a_proj", h, arch.q_lora_rank, L), WeightMatrix("q_b_proj", arch.q_lora_rank, a * qk, L)]
    else:
        out.append(WeightMatrix("q_proj", h, a * qk, L))
    out += [
        WeightMatrix("kv_a_proj_with_mqa", h, arch.kv_lora_rank + arch.qk_rope_head_dim, L),
        WeightMatrix("kv_b_proj", arch.kv_lora_rank, a * (arch.qk_nope_head_dim + arch.v_head_dim), L),
        WeightMatrix("o_proj", a * arch.v_head_dim, h, L),
    ]
    if arch.index_n_heads:  # DeepSeek-V3.2 lightning indexer: wq_b, wk, weights_proj
        n, d = arch.index_n_heads, arch.index_head_dim
        out += [
            WeightMatrix("indexer.wq_b", arch.q_lora_rank or h, n * d, L),
            WeightMatrix("indexer.wk", h, d, L),
            WeightMatrix("indexer.weights_proj", h, n, L, quantizable=False),
        ]
    return out


def _attention(arch: ArchShape) -> list[WeightMatrix]:
    L = arch.num_attention_layers
    if arch.is_mla:
        return _mla(arch, L)
    h, a, d, kv = arch.hidden_size, arch.num_attention_heads, arch.head_dim, arch.num_key_value_heads
    q_out = a * d * (2 if arch.attention_output_gate else 1)  # Qwen3-Next: query and output gate in one projection
    return [
        WeightMatrix("q_proj", h, q_out, L),
        WeightMatrix("k_proj", h, kv * d, L),
        WeightMatrix("v_proj", h, kv * d, L),
        WeightMatrix("o_proj", a * d, h, L),
    ]


def _linear_attention(arch: ArchShape) -> list[WeightMatrix]:
    """Gated DeltaNet layers (Qwen3-Next): fused q/k/v/z and b/a input projections, output projection."""
    n = len(arch.linear_attention_layers)
    if not n:
        return []
    h = arch.hidden_size
    k_dim = arch.linear_num_key_heads * arch.linear_key_head_dim
    v_dim = arch.linear_num_value_heads * arch.linear_value_head_dim
    return [
        WeightMatrix("linear_attn.in_proj_qkvz", h, 2 * k_dim + 2 * v_dim, n),
        WeightMatrix("linear_attn.in_proj_ba", h, 2 * arch.linear_num_value_heads, n),
        WeightMatrix("linear_attn.out_proj", v_dim, h, n),
    ]


def mlp_matrices(arch: ArchShape, inter: int, count: int, prefix: str) -> list[WeightMatrix]:
    if count == 0 or inter == 0:
        return []
    h = arch.hidden_size
    if arch.mlp_gated:
        return [
            WeightMatrix(f"{prefix}gate_proj", h, inter, count),
            WeightMatrix(f"{prefix}up_proj", h, inter, count),
            WeightMatrix(f"{prefix}down_proj", inter, h, count),
        ]
    return [WeightMatrix(f"{prefix}fc_in", h, inter, count), WeightMatrix(f"{prefix}fc_out", inter, h, count)]


def weight_matrices(arch: ArchShape) -> list[WeightMatrix]:
    """Every 2-D weight kind with its shape and multiplicity (embeddings and lm_head included)."""
    h = arch.hidden_size
    mats = [WeightMatrix("embed_tokens", arch.vocab_size, h, 1, quantizable=False)]
    if arch.learned_position_embeddings:
        mats.append(WeightMatrix("embed_positions", arch.learned_position_embeddings, h, 1, False))
    mats += _attention(arch) + _linear_attention(arch)
    mats += mlp_matrices(arch, arch.intermediate_size, arch.num_dense_layers, "")
    if arch.is_moe:
        m = arch.num_moe_layers
        mats += mlp_matrices(arch, arch.moe_intermediate_size, m * arch.num_experts, "experts.")
        shared = arch.shared_expert_intermediate_size or arch.moe_intermediate_size
        mats += mlp_matrices(arch, shared, m * arch.num_shared_experts, "shared_experts.")
        mats.append(WeightMatrix("router", h, arch.num_experts, m, quantizable=False))
        if arch.shared_expert_gate:
            mats.append(WeightMatrix("shared_expert_gate", h, 1, m, quantizable=False))
    if not arch.tie_word_embeddings:
        mats.append(WeightMatrix("lm_head", h, arch.vocab_size, 1, quantizable=False))
    return mats


def _mlp_bias(arch: ArchShape, inter: int) -> int:
    return int((2 * inter if arch.mlp_gated else inter) + arch.hidden_size)


def vector_params(arch: ArchShape) -> int:
    """Norm weights and biases, gates and other 1-D parameters."""
    L, h, a = arch.num_hidden_layers, arch.hidden_size, arch.num_attention_heads
    La, kv, d = arch.num_attention_layers, arch.num_key_value_heads, arch.head_dim
    per_norm = 2 * h if arch.norm_type == "layernorm" else h
    n = L * arch.norms_per_layer * per_norm + per_norm  # + final norm
    if arch.embedding_norm:
        n += per_norm
    if arch.lm_head_bias and not arch.tie_word_embeddings:
        n += arch.vocab_size
    if arch.attention_sinks:
        n += La * a
    if arch.is_mla:
        n += La * (2 if arch.norm_type == "layernorm" else 1) * (arch.kv_lora_rank + arch.q_lora_rank)
        if arch.index_n_heads:
            n += La * 2 * arch.index_head_dim  # the indexer's key LayerNorm (weight and bias)
    if arch.qk_norm:
        n += La * ((a + kv) * d if arch.qk_norm_full else 2 * d) * (2 if arch.norm_type == "layernorm" else 1)
    if arch.attention_bias and not arch.is_mla:
        n += La * (a * (2 if arch.attention_output_gate else 1) + 2 * kv) * d
    if arch.attention_out_bias:
        n += La * h
    if arch.linear_attention_layers:
        k_dim = arch.linear_num_key_heads * arch.linear_key_head_dim
        v_dim = arch.linear_num_value_heads * arch.linear_value_head_dim
        conv = (2 * k_dim + v_dim) * arch.linear_conv_kernel_dim  # depthwise conv1d, no bias
        n += len(arch.linear_attention_layers) * (conv + 2 * arch.linear_num_value_heads + arch.linear_value_head_dim)
    if arch.router_bias:
        n += arch.num_moe_layers * arch.num_experts
    if arch.mlp_bias:
        n += arch.num_dense_layers * _mlp_bias(arch, arch.intermediate_size)
        shared = arch.shared_expert_intermediate_size or arch.moe_intermediate_size
        n += arch.num_moe_layers * (arch.num_experts * _mlp_bias(arch, arch.moe_intermediate_size)
                                    + arch.num_shared_experts * _mlp_bias(arch, shared))
    return int(n)


def linear_state_elements(arch: ArchShape) -> int:
    """Elements of one sequence's fixed state in one linear-attention layer: the conv window and the
    ``value_heads x key_dim x value_dim`` recurrent state (Gated DeltaNet); it does not grow with context."""
    if not arch.linear_attention_layers:
        return 0
    k_dim = arch.linear_num_key_heads * arch.linear_key_head_dim
    v_dim = arch.linear_num_value_heads * arch.linear_value_head_dim
    conv = (2 * k_dim + v_dim) * (arch.linear_conv_kernel_dim - 1)
    return int(conv + arch.linear_num_value_heads * arch.linear_key_head_dim * arch.linear_value_head_dim)


def mtp_params(arch: ArchShape, one_layer: int) -> int:
    """Multi-token-prediction modules as the checkpoints ship them (DeepSeek-V3, GLM-4.5): one decoder layer each
    (``one_layer`` params), ``eh_proj`` (2h x h), three norms, and a stored copy of the embedding and the head
    (DeepSeek-V3: 671 B + 14 B = 685 B; GLM-4.5: 358 B on the Hub)."""
    h = arch.hidden_size
    return int(arch.num_mtp_layers * (one_layer + 2 * h * h + 3 * h + 2 * arch.vocab_size * h))

"""Activation memory: training after Korthikanti et al. 2022 (arXiv:2205.05198), per architecture, and the
working set of one inference forward pass (``prefill_activation_bytes``, shared by every runtime rule)."""

from __future__ import annotations

from ._architecture import Architecture
from ._common import GB

__all__ = ["activation_bytes", "layer_activation_bytes_per_token", "prefill_activation_bytes"]

LOGITS_BYTES = 2 + 4 + 4  # 16-bit logits, their fp32 upcast, fp32 log-softmax saved by cross-entropy


def layer_activation_bytes_per_token(
    arch: Architecture, seq_len: int, recompute: str, flash_attention: bool, act_bytes: float = 2.0
) -> float:
    """Bytes one transformer layer saves for backward, per token.

    Korthikanti's terms taken from the actual layer: inputs of the q/k/v and output projections, Q, K
    and V, the MLP inputs and intermediates (4 x intermediate for a gated MLP, 2 x for GeLU), the
    inputs of every norm, 1-byte dropout masks when the model uses dropout, and without
    FlashAttention the ``a x s`` softmax (plus dropout) scores. For GPT-style layers this is exactly
    ``34 h + 5 a s`` bytes. ``selective`` recompute drops the score term; FlashAttention keeps only an
    fp32 log-sum-exp per head.
    """
    h, a = arch.hidden_size, arch.num_attention_heads
    if arch.is_mla:
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        attn = h + arch.q_lora_rank + (arch.kv_lora_rank + arch.qk_rope_head_dim) + 2 * a * qk + 2 * a * arch.v_head_dim
    else:
        d, kv = arch.head_dim, arch.num_key_value_heads
        attn = h + a * d + 2 * kv * d + a * d
    mult = 4 if arch.mlp_gated else 2
    mlp_dense = h + mult * arch.intermediate_size
    mlp_moe = h + mult * arch.moe_intermediate_size * (arch.num_experts_per_tok + arch.num_shared_experts)
    if arch.is_moe and arch.num_moe_layers:
        mlp = (arch.num_dense_layers * mlp_dense + arch.num_moe_layers * mlp_moe) / arch.num_hidden_layers
    else:
        mlp = mlp_dense
    elements = attn + mlp + arch.norms_per_layer * h
    total = act_bytes * elements
    if arch.dropout:
        total += 2 * h  # masks after the attention output and after the MLP
    if flash_attention:
        total += 4 * a  # fp32 log-sum-exp; attention probabilities are recomputed in backward
    elif recompute == "none":
        total += act_bytes * a * seq_len + (a * seq_len * (1 + act_bytes) if arch.dropout else 0)
    return total


def activation_bytes(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    recompute: str,
    flash_attention: bool,
    act_bytes: float = 2.0,
) -> tuple[int, dict[str, float]]:
    """Activation bytes of one micro-batch on one GPU, with a GB breakdown.

    ``none``/``selective``: every layer keeps its activations. ``full``: each layer keeps only its
    input (``2 s b h``), plus one layer's full set while it is recomputed. The output layer adds the
    logits (``s b V x 10`` bytes) and the final norm input.
    """
    tokens = seq_len * micro_batch
    L, h = arch.num_hidden_layers, arch.hidden_size
    layer = (
        layer_activation_bytes_per_token(
            arch, seq_len, "none" if recompute == "full" else recompute, flash_attention, act_bytes
        )
        * tokens
    )
    layers = L * act_bytes * h * tokens + layer if recompute == "full" else L * layer
    head = tokens * (act_bytes * h + LOGITS_BYTES * arch.vocab_size)
    total = int(layers + head)
    return total, {
        "layers_gb": layers / GB,
        "per_layer_gb": layer / GB,
        "logits_gb": tokens * LOGITS_BYTES * arch.vocab_size / GB,
        "activations_gb": total / GB,
    }


def prefill_activation_bytes(
    arch: Architecture, tokens: int, tensor_parallel: int = 1, logits_rows: int = 1, act_bytes: float = 2.0,
    logits_bytes: float = 4.0,
) -> int:
    """Peak transient memory of one forward pass over ``tokens`` tokens (no autograd), per GPU.

    Per token: the residual stream and its normed copy (2h) plus the larger of the attention
    working set (q, k, v, attention output) and the MLP working set (gate, up and their product:
    3 x intermediate; for MoE the routed + shared experts a token visits), sharded by tensor
    parallelism; plus ``logits_bytes`` of logits per vocabulary entry (fp32: 4) for ``logits_rows`` positions.
    """
    h, a, tp = arch.hidden_size, arch.num_attention_heads, tensor_parallel
    if arch.is_mla:
        attn = a * (2 * (arch.qk_nope_head_dim + arch.qk_rope_head_dim) + 2 * arch.v_head_dim)
    else:
        attn = (2 * a + 2 * arch.num_key_value_heads) * arch.head_dim
    widths = [attn / tp]
    mult = 3 if arch.mlp_gated else 2
    if arch.num_dense_layers:
        widths.append(mult * arch.intermediate_size / tp)
    if arch.is_moe:
        widths.append(mult * arch.moe_intermediate_size * (arch.num_experts_per_tok + arch.num_shared_experts) / tp)
    per_token = act_bytes * (2 * h + max(widths))
    return int(tokens * per_token + logits_rows * arch.vocab_size * logits_bytes)

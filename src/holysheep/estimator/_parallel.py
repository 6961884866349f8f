"""How a model shards over tensor-parallel GPUs: the head rule and the notes an estimate records about it."""

from __future__ import annotations

from ._architecture import Architecture

__all__ = ["parallel_notes", "tensor_parallel_problem"]


def tensor_parallel_problem(heads: int, kv_heads: int, tp: int, *, mla: bool = False) -> str | None:
    """Why ``tp`` tensor-parallel ranks cannot shard these heads, or ``None`` when they can (vLLM and SGLang's rule).

    Query heads split evenly (``heads % tp == 0``). KV heads split evenly when ``tp`` divides them and are
    replicated when ``tp`` exceeds them: each KV head then lives on ``tp / kv_heads`` ranks, which needs
    ``tp % kv_heads == 0`` (vLLM's ``QKVParallelLinear``). MLA's latent cache is replicated on every rank.
    """
    if heads % tp:
        return f"{tp} GPUs do not divide the {heads} attention heads (query heads split evenly over the GPUs)"
    if mla or kv_heads <= 0:
        return None
    if tp <= kv_heads and kv_heads % tp:
        return f"{tp} GPUs do not divide the {kv_heads} KV heads"
    if tp > kv_heads and tp % kv_heads:
        return (f"{tp} GPUs are not a multiple of the {kv_heads} KV heads (a KV head is replicated on a whole "
                "number of GPUs)")
    return None


def parallel_notes(arch: Architecture, tp: int, *, split: bool, expert_parallel: bool) -> tuple[list[str], list[str]]:
    """(notes, warnings) about replicated KV heads or latents, MoE expert placement and an invalid TP degree."""
    notes: list[str] = []
    if arch.is_mla and tp > 1 and not split:
        notes.append("MLA latent cache is replicated on every tensor-parallel rank")
    elif not arch.is_mla and tp > arch.num_key_value_heads and not split:
        notes.append(f"TP {tp} > {arch.num_key_value_heads} KV heads: each KV head is replicated on "
                     f"{tp // arch.num_key_value_heads} GPUs (its cache counted on each)")
    if arch.is_moe and tp > 1 and not split:
        notes.append(f"experts expert-parallel: {arch.num_experts} whole experts spread over {tp} GPUs, an "
                     "all-to-all dispatch and combine per MoE layer" if expert_parallel else
                     f"experts tensor-parallel (vLLM's and SGLang's default): each GPU holds 1/{tp} of every "
                     "expert, one all-reduce per MoE layer; expert_parallel=True models expert parallelism")
    problem = None if split else tensor_parallel_problem(arch.num_attention_heads, arch.num_key_value_heads, tp,
                                                          mla=arch.is_mla)
    return notes, [f"tensor_parallel={tp}: {problem}; vLLM and SGLang refuse this"] if problem else []

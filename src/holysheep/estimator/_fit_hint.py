"""Which training switch would make a run fit: the hint a rejected training option carries (issue 30)."""

from __future__ import annotations

from typing import Any

__all__ = ["first_fit"]


def first_fit(est_in: Any, gpu: object, n: int) -> str | None:
    """The first change (checkpointing, ZeRO-3, offload, a shorter sequence) under which ``est_in`` (a
    ``TrainingEstimate``) fits ``n`` GPUs like ``gpu``, as text, or None when none does."""
    est = est_in if n == est_in.num_gpus else est_in.with_num_gpus(n)
    tries: list[tuple[str, dict[str, object]]] = []
    if est_in.gradient_checkpointing != "full":
        tries.append(("with gradient_checkpointing='full'", {"gradient_checkpointing": "full"}))
    if n > 1 and est_in.zero_stage < 3:
        tries.append(("with zero_stage=3", {"zero_stage": 3}))
    if not est_in.offload_optimizer:
        zero = max(est_in.zero_stage, 3 if n > 1 else 2)
        tries.append((f"with zero_stage={zero} and offload_optimizer=True",
                      {"zero_stage": zero, "offload_optimizer": True}))
    seqs = [est_in.seq_len >> k for k in range(1, 12) if est_in.seq_len >> k >= 128]
    tries += [(f"at seq_len={s}", {"seq_len": s}) for s in seqs if s * 4 >= est_in.seq_len]
    if not est_in.offload_params:
        tries.append(("with zero_stage=3, offload_optimizer and offload_params (slow)",
                      {"zero_stage": 3, "offload_optimizer": True, "offload_params": True}))
    tries += [(f"at seq_len={s}", {"seq_len": s}) for s in seqs if s * 4 < est_in.seq_len]
    for label, change in tries:
        alt = est.with_options(**change)
        if alt.fits(gpu, n):
            return f"fits {label} ({alt.per_gpu_gb:.1f} GB per GPU)"
    return None

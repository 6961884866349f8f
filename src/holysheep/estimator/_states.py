"""Per-GPU model-state bytes (weights, gradients, optimizer, master weights) under ZeRO 0-3."""

from __future__ import annotations

from ._architecture import Architecture

__all__ = ["adafactor_bytes", "lora_params", "model_state_bytes"]


def lora_params(arch: Architecture, rank: int) -> int:
    """Trainable LoRA parameters on every projection/expert matrix ("all-linear"): ``r x (in + out)``."""
    return sum(rank * (m.rows + m.cols) * m.count for m in arch.weight_matrices() if m.quantizable)


def adafactor_bytes(arch: Architecture) -> int:
    """Factored second moments (row + column fp32 vectors per matrix, full for 1-D params), no momentum."""
    mats = arch.weight_matrices()
    vec = arch.num_params - sum(m.params for m in mats)
    return 4 * (sum((m.rows + m.cols) * m.count for m in mats) + vec)


def model_state_bytes(
    *,
    params: int,
    precision: str,
    optimizer: str,
    zero_stage: int,
    num_gpus: int,
    offload_optimizer: bool = False,
    offload_params: bool = False,
    largest_layer_params: int = 0,
    accounting: str = "deepspeed",
    optimizer_bytes_total: int | None = None,
) -> tuple[dict[str, float], float]:
    """Per-GPU bytes of weights, gradients, optimizer states and fp32 master weights, plus CPU bytes.

    ``precision`` is ``mixed`` (16-bit weights/grads + fp32 master), ``true16`` or ``fp32``. With
    ``accounting="deepspeed"`` ZeRO >= 1 also holds an fp32 gradient partition and ZeRO-3 a gathered
    working set of 4 x largest layer (DeepSpeed's estimators); ``"zero-paper"`` is the 16-byte
    accounting of Rajbhandari et al. (arXiv:1910.02054).
    """
    n, s = num_gpus, zero_stage
    w = 4.0 if precision == "fp32" else 2.0
    g = w
    master = 4.0 if precision == "mixed" else 0.0
    state_dtype = 2.0 if precision == "true16" else 4.0
    per_param = {
        "adamw": 2 * state_dtype,
        "adamw-8bit": 2 + 8 / 256,
        "sgd": state_dtype,
        "sgd-no-momentum": 0.0,
        "adafactor": 0.0,
    }[optimizer]
    opt_total = optimizer_bytes_total if optimizer_bytes_total is not None else per_param * params
    ds = accounting == "deepspeed" and s >= 1
    g32 = 4.0 if ds and precision == "mixed" else 0.0
    shard_os = n if s >= 1 else 1
    weights = params * w / (n if s == 3 else 1)
    grads16 = 0.0 if (ds and s == 3) else params * g / (n if s >= 2 else 1)
    if offload_optimizer and s >= 2:
        grads16 = 0.0  # reduced straight into CPU buffers
    gpu = {
        "weights": weights,
        "gradients": grads16 + params * g32 / shard_os,
        "optimizer": opt_total / shard_os,
        "master_weights": params * master / shard_os,
    }
    cpu = 0.0
    if offload_optimizer:
        cpu += (gpu["optimizer"] + gpu["master_weights"] + params * g32 / shard_os) * n
        gpu["optimizer"] = gpu["master_weights"] = 0.0
        gpu["gradients"] = grads16
    if offload_params:
        cpu += weights * n
        gpu["weights"] = 0.0
    if ds and s == 3:
        gpu["weights"] += 4 * largest_layer_params
    return gpu, cpu

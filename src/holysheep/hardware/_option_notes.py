"""The notes and rejections an option carries that depend on the part, not on memory or speed: the weight
format's native path on this GPU, how a mixture-of-experts model's experts are placed over the GPUs, and the
interconnect, packaging and price caveats of the GPU (``pick_hardware`` attaches them)."""

from __future__ import annotations

import math

from ..accelerators import GPU
from ._overheads import TRITON_MOE_LAYER_S
from ._speed import link_kind, scale_up_domain, triton_moe_of

__all__ = ["gpu_notes", "moe_placement_note", "precision_notes"]


def precision_notes(g: GPU, spec: object) -> tuple[str | None, list[str]]:
    """(rejection reason or None, notes) for the quant format on this GPU."""
    need = getattr(spec, "requires_native", None)
    if need and not g.supports(str(need)):
        return f"no native {need} path on {g.name} (quant needs {need} tensor cores)", []
    cc = g.compute_capability
    cc_num = float(cc) if g.vendor == "nvidia" and cc and cc.replace(".", "").isdigit() else None
    if getattr(spec, "name", None) == "int4-awq" and cc_num is not None and cc_num < 7.5:
        return f"no int4 AWQ kernel for compute capability {cc} (vLLM's AWQ needs 7.5+; try int4-gptq)", []
    notes = []
    compute = str(getattr(spec, "compute_dtype", "bf16") or "bf16")
    if compute == "bf16" and not g.supports("bf16"):
        notes.append("no BF16 on this part: served in FP16")
    if cc_num is not None and cc_num < 8.0:
        notes.append(f"compute capability {cc}: no FlashAttention-2 (needs 8.0+)")
    if g.vendor == "amd" and need == "fp8":
        notes.append("AMD FP8 is the FNUZ flavour: OCP FP8 checkpoints need conversion")
    return None, notes


def moe_placement_note(est: object, devices: int) -> str | None:
    """How an MoE model's experts are placed over ``devices`` GPUs and what that costs, or ``None``."""
    arch = getattr(est, "architecture", None)
    if devices <= 1 or not getattr(arch, "is_moe", False) or getattr(est, "layer_split", False):
        return None
    if getattr(est, "expert_parallel", False):
        return (f"expert parallel: {getattr(arch, 'num_experts', 0)} experts over {devices} GPUs; the most loaded "
                "GPU sets the pace, plus an all-to-all dispatch and combine per MoE layer")
    fused = (f"; this release's Triton fused MoE adds {TRITON_MOE_LAYER_S * 1e3:.2f} ms per MoE layer (fitted)"
             if triton_moe_of(est) else "")
    return (f"experts tensor-parallel (runtime default): 1/{devices} of each expert per GPU, its all-reduce "
            f"per layer{fused}; pass expert_parallel=True (--expert-parallel) for expert parallelism")


def gpu_notes(g: GPU, devices: int, training: bool) -> list[str]:
    notes = []
    kind = "data parallel" if training else "tensor parallel"
    if devices > 1 and not g.has_fast_interconnect:
        notes.append(f"{kind} over PCIe (no NVLink-class link): lower efficiency")
    elif devices > 1 and link_kind(g, devices) == "pcie":
        notes.append(f"NVLink bridges join pairs only: {devices} GPUs run {kind} over PCIe between them")
    elif devices > 1 and link_kind(g, devices) == "network":
        domain = scale_up_domain(g)
        notes.append(f"{kind} over the network: NVLink joins {domain} {'GPU' if domain == 1 else 'GPUs'} at most "
                     f"({g.form_factor}), so {devices} span {math.ceil(devices / domain)} domains")
    if g.devices_per_package > 1:
        notes.append(f"each package is {g.devices_per_package} devices of {g.memory_per_device_gb:g} GB")
    if g.form_factor == "SoM":
        notes.append("edge module: memory shared with the CPU")
    if g.price_per_hour is None:
        notes.append("no price in the table: register_gpus() a price to rank by cost")
    elif not any(p.kind == "list" for p in g.prices):
        notes.append("price is a marketplace figure")
    return notes

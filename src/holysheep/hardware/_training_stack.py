"""Which accelerators a fine-tune can run on, and on how many devices (issue 30, point 5).

The training estimates assume PyTorch with DeepSpeed ZeRO or FSDP (and bitsandbytes for QLoRA). That stack runs
on CUDA and ROCm GPUs. Other parts are offered only where a real training stack exists, with a note naming it:

* Google TPUs: JAX/XLA (MaxText) or PyTorch/XLA's FSDP, not DeepSpeed; no bitsandbytes, so no QLoRA.
* Intel Gaudi: Habana's DeepSpeed and FSDP (optimum-habana); AWS Trainium: the Neuron SDK (NxD Training).
* Apple silicon: MLX LoRA/QLoRA (mlx-lm) on one machine only; no full fine-tune, no multi-device run.
* Systems-on-chip and edge modules (DGX Spark, Ryzen AI Max, Jetson): one device, no multi-device fabric.
* Inference-only chips (AWS Inferentia) are refused.
"""

from __future__ import annotations

from ..accelerators import GPU

__all__ = ["training_support"]

_ONE_DEVICE_FORMS = ("soc", "som")


def training_support(g: GPU, est: object) -> tuple[str | None, int | None, list[str]]:
    """``(rejection reason or None, most devices or None for any, notes)`` for training ``est`` on ``g``."""
    method = str(getattr(est, "method", "full"))
    ident = f"{g.id} {g.name}".lower()
    form = str(g.form_factor or "").lower()
    if "inferentia" in ident:
        return f"{g.name} is an inference-only chip: no training stack (use Trainium or a GPU)", None, []
    if g.vendor == "apple":
        if method in ("lora", "qlora"):
            return None, 1, ["MLX LoRA (mlx-lm) on one machine, not PyTorch/DeepSpeed"]
        return (f"{g.name}: Apple silicon trains only with MLX LoRA/QLoRA on one machine (no DeepSpeed/FSDP); "
                "use method='lora'"), None, []
    if g.vendor == "google":
        if method == "qlora":
            return f"{g.name}: QLoRA's bitsandbytes NF4 kernels need CUDA or ROCm; use method='lora' on TPU", None, []
        return None, None, ["TPU: JAX/XLA (MaxText) or PyTorch/XLA FSDP, not DeepSpeed; ZeRO figures are its "
                            "FSDP equivalent"]
    if "trainium" in ident or g.id.startswith("trn"):
        return None, None, ["Trainium: the AWS Neuron SDK (NxD Training), not DeepSpeed/FSDP on CUDA"]
    if g.vendor == "intel" and "gaudi" in ident:
        return None, None, ["Gaudi: Habana's DeepSpeed/FSDP (optimum-habana), not CUDA"]
    if g.vendor == "intel":
        return None, 1, ["Intel XPU (PyTorch XPU / IPEX) on one card; no DeepSpeed ZeRO across cards"]
    if form in _ONE_DEVICE_FORMS:
        return None, 1, [f"{form.upper()} with unified memory: one device, no multi-device training fabric"]
    return None, None, []

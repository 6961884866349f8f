"""Roofline throughput estimates: decode (bandwidth bound), prefill and training (compute bound).

Decode, per step for a batch of B sequences on T devices::

    bytes_step = W_read + B * kv_bytes_per_token * context          (weights + the KV that is read)
    t_mem      = bytes_step / (T * bandwidth * eta_bw * tp)
    t_compute  = 2 * N_active * B / (T * dense_peak * mfu_decode * tp)
    tokens/s   = B / max(t_mem, t_compute)                          (aggregate over the batch)

Prefill: ``T * dense_peak * mfu * tp / (2 * N_active)`` tokens/s (2 FLOPs per parameter per token).
Training: ``T * dense_peak * mfu_train * link / (k * N)`` tokens/s, k = 6 (full) or 4 (LoRA/QLoRA),
where ``link`` is the same multi-device factor as ``tp`` (gradient all-reduce / ZeRO gathers).

``W_read`` is the whole weight size for dense models; for mixture-of-experts models it is
``W * min(1, B * N_active / N)`` (each sequence touches its own experts). ``context`` is the full
window, so the decode figure is the speed at the *end* of a sequence (a conservative bound).
``tp`` is 1 on one device and ``Efficiencies.tp_fast_link`` / ``tp_pcie`` when tensor parallelism
spans several devices. Every default has a source in ``EFFICIENCY_SOURCES`` (see docs/hardware.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._table import GPU

__all__ = [
    "DEFAULT_EFFICIENCIES",
    "EFFICIENCY_SOURCES",
    "Efficiencies",
    "compute_peak",
    "decode_tokens_per_s",
    "prefill_tokens_per_s",
    "train_tokens_per_s",
]


@dataclass(frozen=True)
class Efficiencies:
    """Achievable fractions of datasheet peaks used by the roofline. Pass your own to the picker."""

    bandwidth: float = 0.70
    """eta_bw: achieved / spec memory bandwidth for decode (range 0.55-0.85)."""
    bandwidth_int4: float = 0.50
    """eta_bw for weight-only INT4 (AWQ/GPTQ) whose dequant kernels do not saturate bandwidth (0.42-0.6)."""
    bandwidth_amd: float = 0.60
    """eta_bw on AMD parts until measured with tuned kernels."""
    mfu: float = 0.50
    """Model FLOPs utilisation for prefill and for the decode compute bound (range 0.4-0.6)."""
    mfu_train: float = 0.40
    """MFU for training (Llama 3 405B pre-training reached 0.38-0.43)."""
    tp_fast_link: float = 0.90
    """Per-device efficiency when tensor parallelism runs over NVLink / Infinity Fabric / Gaudi RoCE."""
    tp_pcie: float = 0.60
    """Per-device efficiency when tensor parallelism runs over PCIe only (L4, L40S, RTX cards)."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not 0 < value <= 1:
                from .._exceptions import InvalidRequestError

                raise InvalidRequestError(
                    f"Efficiencies.{name} must be in (0, 1], got {value!r}", field=name, reason="out of range"
                )


DEFAULT_EFFICIENCIES = Efficiencies()

EFFICIENCY_SOURCES: dict[str, str] = {
    "bandwidth": "pytorch-labs/gpt-fast README: Llama-2-7B BF16 on A100-80GB at 1,397 of 2,039 GB/s (68.5%); "
    "70B int8 TP2 73%. gpus.md section 8.1 recommends 0.7 (range 0.55-0.85).",
    "bandwidth_int4": "pytorch-labs/gpt-fast README: int4 weight-only decode at 863 GB/s (42%) on A100; "
    "gpus.md section 8.1 gives 0.45-0.6 for weight-only INT4.",
    "bandwidth_amd": "pytorch-labs/gpt-fast README: MI250X single GCD 1,029 of 1,638 GB/s (63%).",
    "mfu": "gpus.md section 8.2: MFU 0.5 default, range 0.4-0.6 (MAMF ceilings 80-87% BF16 on A100/H100, "
    "stas00/ml-engineering; 76% large-batch prefill, Pope et al. arXiv:2211.05102).",
    "mfu_train": "Llama 3 paper arXiv:2407.21783: 380-430 TFLOPS/GPU = 38-43% MFU on H100 BF16.",
    "tp_fast_link": "Assumption (not measured): gpt-fast shows 70B TP2 at 73% bandwidth vs 68.5% at TP1, "
    "but 7B TP8 only 35%; 0.9 is a middle value for large shards over NVLink.",
    "tp_pcie": "Assumption (not measured): PCIe Gen4 x16 is 32 GB/s per direction vs 450 GB/s for NVLink4 "
    "(gpus.md section 8.3), so all-reduce time is far larger; 0.6 is a planning value.",
}

_FALLBACK = {"fp8": "bf16", "int8": "bf16", "fp4": "fp8", "tf32": "bf16", "bf16": "fp16", "fp32": "fp32"}


def compute_peak(gpu: GPU, precision: str) -> tuple[float | None, str]:
    """Dense TFLOPS at the precision the GEMMs run in, falling back to bf16 then fp16 (V100/T4)."""
    seen = set()
    p = precision
    while p not in seen:
        seen.add(p)
        v = gpu.tflops(p)
        if v:
            return v, p
        p = _FALLBACK.get(p, "bf16")
    v = gpu.tflops("fp16")
    return (v, "fp16") if v else (None, precision)


def _tp_factor(gpu: GPU, devices: int, eff: Efficiencies) -> float:
    if devices <= 1:
        return 1.0
    return eff.tp_fast_link if gpu.has_fast_interconnect else eff.tp_pcie


def bandwidth_efficiency(gpu: GPU, eff: Efficiencies, *, weight_only_int4: bool) -> float:
    """eta_bw for this part and weight format: the lowest of the applicable efficiencies."""
    e = eff.bandwidth
    if weight_only_int4:
        e = min(e, eff.bandwidth_int4)
    if gpu.vendor == "amd":
        e = min(e, eff.bandwidth_amd)
    return e


def decode_tokens_per_s(
    gpu: GPU,
    count: int,
    *,
    weight_bytes: float,
    kv_bytes_per_token: float,
    context: int,
    batch: int,
    params: float,
    active_params: float,
    precision: str = "bf16",
    weight_only_int4: bool = False,
    eff: Efficiencies = DEFAULT_EFFICIENCIES,
) -> float:
    """Aggregate decode tokens/s of ``batch`` sequences on ``count`` packages (see module docstring)."""
    devices = count * gpu.devices_per_package
    tp = _tp_factor(gpu, devices, eff)
    frac = 1.0 if params <= 0 else min(1.0, batch * active_params / params)
    bytes_step = weight_bytes * frac + batch * kv_bytes_per_token * context
    bw = count * gpu.bandwidth_gb_s * 1e9 * bandwidth_efficiency(gpu, eff, weight_only_int4=weight_only_int4) * tp
    t_step = bytes_step / bw
    peak, _ = compute_peak(gpu, precision)
    if peak:
        t_step = max(t_step, 2 * active_params * batch / (count * peak * 1e12 * eff.mfu * tp))
    return batch / t_step


def prefill_tokens_per_s(
    gpu: GPU, count: int, *, active_params: float, precision: str = "bf16", eff: Efficiencies = DEFAULT_EFFICIENCIES
) -> float | None:
    """Prompt tokens/s: dense peak x MFU / (2 x active params); ``None`` if no compute peak is known."""
    peak, _ = compute_peak(gpu, precision)
    if not peak or active_params <= 0:
        return None
    tp = _tp_factor(gpu, count * gpu.devices_per_package, eff)
    return count * peak * 1e12 * eff.mfu * tp / (2 * active_params)


def train_tokens_per_s(
    gpu: GPU, count: int, *, active_params: float, flops_per_param: float = 6.0,
    eff: Efficiencies = DEFAULT_EFFICIENCIES,
) -> float | None:
    """Training tokens/s with data parallelism: BF16 dense peak x MFU_train x link / (k x active params).

    ``flops_per_param`` k is 6 for a full fine-tune (forward 2 + backward 4) and 4 for LoRA/QLoRA,
    whose frozen base weights need no weight gradients.
    """
    peak, _ = compute_peak(gpu, "bf16")
    if not peak or active_params <= 0:
        return None
    link = _tp_factor(gpu, count * gpu.devices_per_package, eff)
    return count * peak * 1e12 * eff.mfu_train * link / (flops_per_param * active_params)

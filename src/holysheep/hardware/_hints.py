"""What would make a near-miss fit: a higher memory fraction, a shorter context, or more GPUs.

Used by the picker for inference estimates that do not fit a GPU count; each hint is checked with the
estimate's own memory rule (``memory_check``), so a hint that is printed does fit.
"""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace
from typing import Any

__all__ = ["MAX_UTILIZATION", "fit_hints"]

MAX_UTILIZATION = 0.98
"""The highest ``gpu_memory_utilization`` suggested: vLLM needs a little memory outside its pool."""
_KNOB = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static"}


def _fits(est: Any, device: object, devices: int) -> bool:
    return bool(est.memory_check(device, devices).fits)


def fit_hints(est: Any, device_gb: float, name: str, devices: int, *, more_gpus: int | None = None,
              cuda_total_gib: float | None = None) -> list[str]:
    """Hints for an inference estimate ``est`` (already sized for ``devices``) that does not fit ``devices``
    devices of ``device_gb`` GB (CUDA's total ``cuda_total_gib`` where known, which vLLM/SGLang size from):
    the memory fraction that fits (vLLM/SGLang), the longest context that fits at this count and batch,
    and ``more_gpus`` when that larger count fits."""
    if not hasattr(est, "memory_check") or not hasattr(est, "with_options"):
        return []
    device = SimpleNamespace(memory_gb=device_gb, name=name, cuda_total_gib=cuda_total_gib)
    out: list[str] = []
    runtime = str(getattr(est, "runtime", ""))
    check = est.memory_check(device, devices)
    total = float(check.gpu_memory_gb)
    if runtime in _KNOB and check.need_gb < total * MAX_UTILIZATION:
        frac = math.ceil(check.need_gb / total * 100) / 100
        tuned = est.with_options(gpu_memory_utilization=frac)
        if _fits(tuned, device, devices):
            out.append(f"{_KNOB[runtime]}={frac:g}")
    context = int(getattr(est, "context", 0) or 0)
    if context > 256:
        from ..estimator import max_context

        with warnings.catch_warnings():  # the picker reports a missing CUDA total once, in its notes
            warnings.simplefilter("ignore", UserWarning)
            longest = max_context(est, device, devices, batch=int(getattr(est, "batch", 1) or 1))
        if 0 < longest < context:
            out.append(f"context <= {longest:,}")
    if more_gpus is not None:
        out.append(f"{more_gpus} GPUs")
    return out

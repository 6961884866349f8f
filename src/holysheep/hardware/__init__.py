"""Accelerator table, roofline throughput and a hardware picker for self-hosting a model.

    from holysheep.hardware import gpu, gpus, pick_hardware
    gpu("H100").dense_tflops["bf16"]      # 989.4 (dense, never the 2:4-sparse headline)
    opts = pick_hardware("llama-3.1-70b", quant="int4-awq", context=8192, batch=4)
    opts[0].label, opts[0].cost_per_million_tokens, opts.rejected

Not imported by ``import holysheep``; the figures and their sources are in ``holysheep/accelerators/data/gpus.json`` and
``docs/hardware.md``.
"""

from ..accelerators import (
    GPU,
    NATIVE_KEYS,
    PRECISIONS,
    PRICE_KINDS,
    GPUTable,
    PriceQuote,
    gpu,
    gpus,
    load_gpus,
    register_gpus,
    reset_gpus,
)
from ._picker import OBJECTIVES, pick_hardware
from ._result import HardwareOption, PickResult
from ._roofline import (
    DEFAULT_EFFICIENCIES,
    EFFICIENCY_SOURCES,
    Efficiencies,
    compute_peak,
    decode_tokens_per_s,
    prefill_tokens_per_s,
    train_tokens_per_s,
)

__all__ = [
    "DEFAULT_EFFICIENCIES",
    "EFFICIENCY_SOURCES",
    "GPU",
    "NATIVE_KEYS",
    "OBJECTIVES",
    "PRECISIONS",
    "PRICE_KINDS",
    "Efficiencies",
    "GPUTable",
    "HardwareOption",
    "PickResult",
    "PriceQuote",
    "compute_peak",
    "decode_tokens_per_s",
    "gpu",
    "gpus",
    "load_gpus",
    "pick_hardware",
    "prefill_tokens_per_s",
    "register_gpus",
    "reset_gpus",
    "train_tokens_per_s",
]

"""The accelerator table: GPU rows (datasheet figures with source and as-of), lookup and user overrides.

Data that the estimator and the hardware picker both read; it imports only the standard library and
``holysheep._exceptions``. The public names are re-exported by ``holysheep.hardware``.

    from holysheep.accelerators import gpu
    gpu("4090").memory_gb
"""

from ._registry import gpu, gpus, load_gpus, register_gpus, reset_gpus
from ._specs import FAST_LINK_GB_S, GPU, NATIVE_KEYS, PRECISIONS, PRICE_KINDS, PriceQuote
from ._text import GPUTable

__all__ = [
    "FAST_LINK_GB_S",
    "GPU",
    "NATIVE_KEYS",
    "PRECISIONS",
    "PRICE_KINDS",
    "GPUTable",
    "PriceQuote",
    "gpu",
    "gpus",
    "load_gpus",
    "register_gpus",
    "reset_gpus",
]

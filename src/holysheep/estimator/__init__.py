"""GPU memory estimates for serving and training open LLMs, from their real architecture.

``estimate_inference_memory`` sizes weights (any of the `quant_spec` formats), KV cache
(GQA/MQA, MLA, sliding windows, fp8), prefill activations and runtime overhead under one runtime's
rules (vLLM, SGLang, transformers, llama.cpp, MLX). ``max_context`` and ``max_batch`` solve for the
longest context and the largest batch that ``fits()`` a GPU setup. ``estimate_training_memory``
sizes model states under ZeRO 0-3, LoRA/QLoRA and
Korthikanti-style activations. Figures are GB (10^9 bytes); ``*_gib`` properties give GiB.
Importing ``holysheep`` alone does not import this module.
"""

from __future__ import annotations

from ._architecture import Architecture, WeightMatrix, dtype_bytes
from ._catalog import CatalogEntry, catalog_entry, get_architecture, list_models
from ._common import MemoryCheck
from ._hf import ArchitectureWarning, UnsupportedArchitectureError
from ._inference import InferenceEstimate, estimate_inference_memory
from ._quant import QuantSpec, list_quants, quant_spec, weight_bytes
from ._runtimes import RUNTIME_SOURCES
from ._solvers import max_batch, max_context
from ._training import TrainingEstimate, estimate_training_memory
from ._vllm import VLLM_PROFILES, VLLMCapacity, VLLMProfile

__all__ = [
    "RUNTIME_SOURCES",
    "VLLM_PROFILES",
    "Architecture",
    "ArchitectureWarning",
    "CatalogEntry",
    "InferenceEstimate",
    "MemoryCheck",
    "QuantSpec",
    "TrainingEstimate",
    "UnsupportedArchitectureError",
    "VLLMCapacity",
    "VLLMProfile",
    "WeightMatrix",
    "catalog_entry",
    "dtype_bytes",
    "estimate_inference_memory",
    "estimate_training_memory",
    "get_architecture",
    "list_models",
    "list_quants",
    "max_batch",
    "max_context",
    "quant_spec",
    "weight_bytes",
]

"""Memory rules of the runtimes that size their KV pool from the memory left after loading: TensorRT-LLM
(and NVIDIA NIM, built on it) and LMDeploy's TurboMind engine.

Both load the weights, reserve the forward pass's working memory, then give a fixed fraction of what is
free to the KV cache (the rest stays free for cuBLAS workspaces, NCCL and other allocations):

* ``tensorrt-llm``: ``KvCacheConfig.free_gpu_memory_fraction``, default 0.9 ("TensorRT LLM will try to
  allocate 90% of free GPU memory for KV cache", https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html;
  ``KvCacheConfig`` reference, ``free_gpu_memory_fraction = 0.9``). The forward pass is sized for
  ``max_num_tokens``, default 8,192 (LLM API ``BaseLlmArgs.max_num_tokens``).
* ``lmdeploy``: ``TurbomindEngineConfig.cache_max_entry_count``, default 0.8, "the percentage of free gpu
  memory occupied by the k/v cache, excluding weights" (lmdeploy/cli/utils.py ``--cache-max-entry-count``,
  https://github.com/InternLM/lmdeploy); prefill in chunks of ``max_prefill_token_num``, default 8,192
  (lmdeploy/messages.py ``TurbomindEngineConfig``).

A request fits when its KV cache fits in that pool: ``kv <= fraction x (memory - weights - working set -
CUDA context)``. Neither runs GGUF or bitsandbytes weights (refused with a typed error), and both run on
NVIDIA GPUs only (the picker rejects others). Their decode speed is the default runtime's, checked by
published rows (TensorRT-LLM 0.5.0's and LMDeploy v0.1.0a1's tables, hardware/data/decode_benchmarks.json);
plans outside those rows' formats and GPUs carry the usual caveats (docs/hardware.md).
"""

from __future__ import annotations

import math

from .._exceptions import InvalidRequestError
from ._architecture import Architecture
from ._common import RUNTIME_OVERHEAD_BYTES, MemoryCheck
from ._quant import QuantSpec, weight_bytes
from ._runtimes import RuntimeMemory, prefill_activation_bytes

__all__ = ["PREALLOC_FRACTION", "PREALLOC_RUNTIMES", "PREALLOC_SOURCES", "PREALLOC_TOKENS", "check_prealloc_quant",
           "prealloc_check", "prealloc_memory"]

PREALLOC_RUNTIMES = {"tensorrt-llm": "TensorRT-LLM", "lmdeploy": "LMDeploy TurboMind"}
PREALLOC_FRACTION = {"tensorrt-llm": 0.9, "lmdeploy": 0.8}
"""The default share of free memory given to the KV pool (``free_gpu_memory_fraction``, ``cache_max_entry_count``)."""
PREALLOC_KNOB = {"tensorrt-llm": "free_gpu_memory_fraction", "lmdeploy": "cache_max_entry_count"}
PREALLOC_TOKENS = {"tensorrt-llm": 8192, "lmdeploy": 8192}
"""Tokens one forward pass holds (``max_num_tokens``, ``max_prefill_token_num``)."""
PREALLOC_SOURCES: dict[str, str] = {
    "tensorrt-llm": "TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction = 0.9 of free memory "
    "(https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html, llm-api/reference/KvCacheConfig.html); "
    "max_num_tokens 8192 (LLM API)",
    "lmdeploy": "LMDeploy --cache-max-entry-count 0.8, 'the percentage of free gpu memory occupied by the k/v "
    "cache, excluding weights' (lmdeploy/cli/utils.py); max_prefill_token_num 8192 (lmdeploy/messages.py), "
    "https://github.com/InternLM/lmdeploy",
}
#: Weight formats of other stacks: GGUF is llama.cpp's, bitsandbytes transformers', MLX's affine formats MLX's.
UNSUPPORTED_QUANTS = frozenset({"q8_0", "q6_k", "q4_k_m", "q4_0", "gguf-mxfp4", "nf4", "bnb-4bit", "int8",
                                "mlx-4bit", "mlx-8bit"})


def check_prealloc_quant(runtime: str, spec: QuantSpec) -> None:
    """A typed error for a weight format ``runtime`` does not load."""
    if runtime in PREALLOC_RUNTIMES and spec.name.split("+")[0] in UNSUPPORTED_QUANTS:
        kind = ("GGUF" if spec.name.startswith(("q", "gguf")) else "MLX" if spec.name.startswith("mlx")
                else "bitsandbytes")
        raise InvalidRequestError(
            f"{PREALLOC_RUNTIMES[runtime]} does not load {kind} weights ({spec.name}); plan it with "
            f"runtime='llama.cpp' (GGUF), 'mlx' (MLX) or 'hf' (bitsandbytes), or pick fp8, int4-awq, int4-gptq "
            "or bf16",
            field="quant", reason="format not served by this runtime")


def prealloc_memory(arch: Architecture, spec: QuantSpec, *, runtime: str, context: int, batch: int, kv: str,
                    tensor_parallel: int, fraction: float | None, max_num_tokens: int | None) -> RuntimeMemory:
    """Per-GPU weights, KV, working set and CUDA context; ``static_fraction`` carries the KV pool's share."""
    tp = tensor_parallel
    frac = PREALLOC_FRACTION[runtime] if fraction is None else fraction
    tokens = max_num_tokens or PREALLOC_TOKENS[runtime]
    w = math.ceil(weight_bytes(arch, spec) / tp)
    act = prefill_activation_bytes(arch, min(tokens, context * batch), tp, logits_rows=batch)
    rm = RuntimeMemory(w, arch.kv_cache_bytes(context, batch, kv, tp), act, RUNTIME_OVERHEAD_BYTES, chunk=tokens,
                       static_fraction=frac)
    rm.notes.append(f"{PREALLOC_RUNTIMES[runtime]}: KV pool = {PREALLOC_KNOB[runtime]} {frac:g} of the memory left "
                    f"after weights, the {tokens:,}-token forward pass and the CUDA context")
    return rm


def prealloc_check(runtime: str, frac: float, breakdown: dict[str, float], mem: float,
                   warned: tuple[str, ...]) -> MemoryCheck:
    """Fits when the KV cache is at most ``frac`` x (``mem`` - weights - working set - context), in GB; the
    need is ``fixed + kv / frac`` so that need <= memory says the same."""
    b = breakdown
    fixed = b["weights"] + b["activations"] + b["overhead"]
    pool = max(0.0, mem - fixed) * frac
    return MemoryCheck(b["kv_cache"] <= pool, fixed + b["kv_cache"] / frac, mem, mem,
                       f"{PREALLOC_RUNTIMES[runtime]}: KV pool {PREALLOC_KNOB[runtime]} {frac:g} of the memory left "
                       f"({pool:.1f} GB for {b['kv_cache']:.1f} GB of KV)", warned)

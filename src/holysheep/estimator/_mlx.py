"""MLX (mlx-lm) memory on Apple unified memory: weights, a KV cache grown in 256-token steps and the prefill peak.

mlx-lm runs the prompt in steps of ``prefill_step_size`` (2,048) tokens (``mlx_lm/generate.py``
``generate_step``) and grows each layer's ``KVCache`` in steps of 256 tokens (``mlx_lm/models/cache.py``,
``KVCache.step``). Its reported peak (``mx.get_peak_memory()``, what ``mlx_lm.generate`` and
``mlx_lm.benchmark`` print) is reached while a prompt step runs:

* **The step's working set**, several layers deep. MLX gives every operation a fresh output buffer and returns
  the buffers an operation used only when the Metal command buffer that ran it completes (a command buffer
  closes every 20-50 operations, ``mlx/backend/metal/device.cpp`` ``max_ops_per_buffer``), so the
  intermediates of about ``MLX_LAYERS_IN_FLIGHT`` layers are alive at once. That depth is calibrated on two
  published ``mlx_lm.benchmark -p 2048`` peaks (docs/estimator.md, "Memory validation"): Llama-3.2-3B 4-bit
  3.285 GB (mlx-lm PR #396) and Qwen3-4B 4-bit 3.30 GB (mlx-lm PR #1569).
* **The logits of the last step.** Releases before 0.27.0 ran the lm_head over every position of the
  prompt's last step (up to 2,048 x vocabulary 16-bit values); 0.27.0 keeps only the last token's
  (mlx-lm PR #406, "only apply lm_head to the last token").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .._exceptions import InvalidRequestError
from ._activations import prefill_activation_bytes
from ._architecture import Architecture
from ._quant import QuantSpec, weight_bytes

__all__ = [
    "MLX_KV_STEP",
    "MLX_LAYERS_IN_FLIGHT",
    "MLX_LAST_TOKEN_LOGITS",
    "MLX_PREFILL_STEP",
    "MlxMemory",
    "mlx_memory",
    "mlx_release",
]

MLX_PREFILL_STEP = 2048
"""mlx-lm ``generate_step(prefill_step_size=2048)``."""
MLX_KV_STEP = 256
"""mlx-lm ``KVCache.step``: each layer's cache grows in blocks of 256 tokens."""
MLX_LAYERS_IN_FLIGHT = 5
"""Layers whose step intermediates are alive at the prefill peak (calibrated, see the module docstring)."""
MLX_LAST_TOKEN_LOGITS = (0, 27)
"""The first mlx-lm release whose prefill builds logits for the last token only (PR #406, in v0.27.0)."""


def mlx_release(version: str | None) -> tuple[int, ...] | None:
    """``"0.26.4"`` as ``(0, 26)``; ``None`` (a current release) stays ``None``; a typed error otherwise."""
    if version is None:
        return None
    parts = re.findall(r"\d+", version) if isinstance(version, str) else []
    if len(parts) < 2:
        raise InvalidRequestError(f"mlx_lm_version must look like 0.26 or 0.26.4, got {version!r}",
                                  field="mlx_lm_version")
    return int(parts[0]), int(parts[1])


@dataclass(frozen=True)
class MlxMemory:
    """MLX's bytes for one request: weights, KV cache, the prefill peak (``activations``) and the prompt step."""

    weights: int
    kv_cache: int
    activations: int
    step: int
    notes: list[str]


def mlx_memory(arch: Architecture, spec: QuantSpec, *, context: int, batch: int, kv: str, prompt: int,
               prefill_chunk: int | None, mlx_lm_version: str | None = None) -> MlxMemory:
    """Bytes of an mlx-lm request of ``prompt`` prompt tokens in ``context`` (see the module docstring)."""
    step = min(prompt * batch, prefill_chunk or MLX_PREFILL_STEP, MLX_PREFILL_STEP)
    kv_tokens = math.ceil(context / MLX_KV_STEP) * MLX_KV_STEP
    kv_b = arch.kv_cache_bytes(kv_tokens, batch, kv, 1)
    work = MLX_LAYERS_IN_FLIGHT * prefill_activation_bytes(arch, step, 1, logits_rows=0)
    release = mlx_release(mlx_lm_version)
    whole_step = release is not None and release < MLX_LAST_TOKEN_LOGITS
    last_step = prompt - step * ((prompt - 1) // step) if whole_step and step else 1
    logits = int(last_step * batch * arch.vocab_size * (2 if whole_step else 4))
    notes = [
        f"MLX: unified memory, no CUDA context; prompt in steps of {step:,} tokens, the intermediates of "
        f"{MLX_LAYERS_IN_FLIGHT} layers alive at the peak ({work / 1e9:.2f} GB); KV cache grown in "
        f"{MLX_KV_STEP}-token steps ({kv_tokens:,} tokens)"
    ]
    if whole_step:
        notes.append(f"mlx-lm {mlx_lm_version} (before 0.27) builds logits for the whole last prompt step: "
                     f"{last_step * batch:,} x {arch.vocab_size:,} x 2 bytes counted")
    return MlxMemory(weight_bytes(arch, spec), int(kv_b), work + logits, step, notes)

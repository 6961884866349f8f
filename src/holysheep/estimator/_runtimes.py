"""Per-runtime memory rules: how vLLM, SGLang, Hugging Face transformers, llama.cpp and MLX lay out one GPU.

Each runtime has its own headroom rule, applied once (by ``InferenceEstimate.memory_check``):

* ``vllm``: weights + profile-pass activation peak + non-PyTorch memory + CUDA graphs + the KV blocks the
  request needs must fit in ``gpu_memory_utilization`` x total (vllm/v1/worker/gpu_worker.py,
  ``determine_available_memory``). The profile pass runs ``max_num_batched_tokens`` tokens; its default
  follows ``EngineArgs.get_batch_defaults`` (vllm/engine/arg_utils.py): 8,192 for the OpenAI server on GPUs
  with at least 70 GiB that are not A100s, else 2,048. V0-era profiles without chunked prefill profile
  ``max(max_model_len, 2048)`` tokens (vLLM 0.2-0.5 ``SchedulerConfig``).
* ``sglang``: weights + KV pool + CUDA context must fit in ``mem_fraction_static`` x total; activations and
  CUDA graphs live in the rest (sglang/srt/server_args.py defaults 0.88 at TP1, 0.87 TP2, 0.85 TP4,
  0.81 TP8; model_runner.py ``profile_max_num_token``).
* ``hf``: no utilization cap; the whole prompt is one forward pass; MLA models cache the *uncompressed*
  per-head keys and values (transformers ``DeepseekV3Attention`` calls ``past_key_values.update`` with
  full K/V: 71x the latent cache for DeepSeek-V3); without FlashAttention (eager) one layer's
  ``batch x heads x q x k`` scores exist at once in 16-bit plus their fp32 softmax. Several GPUs split
  layers (accelerate ``device_map="auto"``), they do not shard them.
* ``llama.cpp``: no utilization cap; ``--split-mode layer`` (default) gives each GPU a contiguous block of
  layers with their KV cache, the output matrix sits on the last GPU and the token embeddings stay in host
  memory (llama.cpp ``llama_model::load_tensors``); each GPU holds a compute buffer of
  ``4 x n_ubatch x max(vocab (last GPU), heads x context (no flash attention), 2 x intermediate)`` bytes
  (the ggml graph allocator reuses buffers; this reproduces the logged "CUDA0 compute buffer size" of
  Llama-3-8B: 258.5 MiB with ``-fa``, 560 MiB without at 8k).
* ``mlx``: unified memory, no CUDA context; prompts in steps of 2,048 tokens (mlx-lm ``prefill_step_size``),
  the step's working set several layers deep and, before mlx-lm 0.27, the last step's logits (``_mlx``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .._exceptions import InvalidRequestError
from ._activations import prefill_activation_bytes
from ._architecture import Architecture, dtype_bytes
from ._common import CUDA_CONTEXT_BYTES, GB, GIB, RUNTIME_OVERHEAD_BYTES
from ._mlx import mlx_memory
from ._quant import QuantSpec, weight_bytes
from ._vllm import VLLMCapacity, fp8_moe_profile_bytes, vllm_capacity, vllm_profile

__all__ = [
    "RUNTIMES",
    "RUNTIME_SOURCES",
    "RuntimeMemory",
    "prefill_activation_bytes",
    "runtime_memory",
    "sglang_mem_fraction",
    "sglang_triton_moe",
    "uses_layer_split",
    "vllm_default_batched_tokens",
]

RUNTIMES = {
    "default": "default",
    "generic": "default",
    "vllm": "vllm",
    "sglang": "sglang",
    "hf": "hf",
    "transformers": "hf",
    "huggingface": "hf",
    "llama.cpp": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "ollama": "llama.cpp",
    "mlx": "mlx",
    "mlx-lm": "mlx",
    "tensorrt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "trtllm": "tensorrt-llm",
    "nim": "tensorrt-llm",
    "lmdeploy": "lmdeploy",
    "turbomind": "lmdeploy",
}

RUNTIME_SOURCES: dict[str, str] = {
    "vllm": "vLLM vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/engine/arg_utils.py "
    "get_batch_defaults (https://github.com/vllm-project/vllm)",
    "sglang": "SGLang python/sglang/srt/server_args.py (mem_fraction_static by TP size) and "
    "model_executor/model_runner.py profile_max_num_token (https://github.com/sgl-project/sglang)",
    "hf": "transformers DeepseekV3Attention (full K/V in the cache); eager_attention_forward (scores + fp32 "
    "softmax); accelerate big-model inference, device_map='auto' (https://huggingface.co/docs/accelerate)",
    "llama.cpp": "llama.cpp src/llama-model.cpp load_tensors (layer split, tok_embd on host), "
    "ggml-alloc graph allocator; n_ubatch default 512 (https://github.com/ggml-org/llama.cpp)",
    "mlx": "mlx-lm generate.py prefill_step_size=2048, models/cache.py KVCache.step=256, PR #406 (last-token "
    "logits from 0.27.0) (https://github.com/ml-explore/mlx-lm); mlx backend/metal/device.cpp max_ops_per_buffer",
}

LLAMA_CPP_UBATCH = 512
SGLANG_CHUNKED_PREFILL = 8192
VLLM_BIG_GPU_BYTES = 70 * GIB


def uses_layer_split(runtime: str) -> bool:
    """True for runtimes that put whole layers on each GPU instead of sharding every layer."""
    return runtime in ("llama.cpp", "hf")


def vllm_default_batched_tokens(gpu_memory_gb: float | None, gpu_name: str | None) -> int:
    """vLLM's OpenAI-server default ``max_num_batched_tokens``: 8,192 on >= 70 GiB non-A100 GPUs, else 2,048."""
    if gpu_memory_gb is None:
        return 8192
    big = gpu_memory_gb * GB >= VLLM_BIG_GPU_BYTES and "a100" not in (gpu_name or "").lower()
    return 8192 if big else 2048


def sglang_mem_fraction(tensor_parallel: int) -> float:
    """SGLang's default ``mem_fraction_static`` for a TP degree (server_args.py)."""
    if tensor_parallel >= 16:
        return 0.79
    if tensor_parallel >= 8:
        return 0.81
    if tensor_parallel >= 4:
        return 0.85
    if tensor_parallel >= 2:
        return 0.87
    return 0.88


@dataclass
class RuntimeMemory:
    """One GPU's bytes under a runtime's layout (the most loaded GPU when layers are split)."""

    weights: int
    kv_cache: int
    activations: int
    overhead: int
    chunk: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    vllm: VLLMCapacity | None = None
    static_fraction: float | None = None  # SGLang mem_fraction_static
    extra: dict[str, int] = field(default_factory=dict)


def eager_scores_bytes(arch: Architecture, batch: int, q_tokens: int, k_tokens: int, tp: int, act: float) -> int:
    """One layer's eager attention scores: 16-bit scores + fp32 softmax + 16-bit probabilities."""
    heads = math.ceil(arch.num_attention_heads / tp)
    return int(batch * heads * q_tokens * k_tokens * (2 * act + 4))


def hf_mla_kv_per_token_layer(arch: Architecture, kv: str) -> float:
    """Bytes transformers caches per token and layer for an MLA model: full per-head K and V."""
    per_head = arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim
    return arch.num_attention_heads * per_head * dtype_bytes(kv)


def _layer_tokens(arch: Architecture, context: int, layers: range) -> int:
    """Cached tokens per sequence summed over ``layers`` (linear-attention layers keep a state instead)."""
    win, linear = set(arch.windowed_layers()), set(arch.linear_attention_layers)
    capped = min(context, (arch.sliding_window or context + 1) - 1)
    return sum(0 if i in linear else capped if i in win else context for i in layers)


def _state_bytes(arch: Architecture, layers: range, batch: int, kv: str) -> float:
    """The fixed linear-attention state of ``batch`` sequences held by ``layers``."""
    n = len(arch.linear_attention_layers)
    mine = sum(1 for i in layers if i in set(arch.linear_attention_layers))
    return arch.linear_state_bytes(batch, kv) * mine / n if n else 0.0


def _split(n_layers: int, gpus: int) -> list[range]:
    """Contiguous, even layer blocks (llama.cpp's default tensor split over identical GPUs)."""
    bounds = [round(i * n_layers / gpus) for i in range(gpus + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(gpus)]


FULL_PROMPT_LOGITS_BEFORE = (4, 45)
"""transformers releases before 4.45 compute the lm_head over the whole prompt and upcast it to fp32 (16-bit
logits + fp32 copy = 6 bytes a vocabulary entry per prompt token); 4.45 added ``num_logits_to_keep`` so that
``generate`` keeps only the last position (huggingface/transformers PR #31292, in v4.45.0)."""


def full_prompt_logits(version: str | None) -> bool:
    """Whether transformers ``version`` (``"4.44.2"``) builds logits for the whole prompt; ``None``: current."""
    if version is None:
        return False
    return _release(version, "transformers_version", "4.44 or 4.44.2", 2) < FULL_PROMPT_LOGITS_BEFORE


def _release(version: str, field: str, example: str, length: int) -> tuple[int, ...]:
    """The first ``length`` numbers of a release (``"0.4.3.post2"``); a typed error naming ``field`` if fewer."""
    parts = re.findall(r"\d+", version)
    if len(parts) < length:
        raise InvalidRequestError(f"{field} must look like {example}, got {version!r}", field=field)
    return tuple(int(p) for p in parts[:length])


#: SGLang releases whose DeepSeek-class MoE path is Triton's fused MoE with Triton block-FP8 GEMMs, as the
#: validated rows ran it (0.4.1.post2 and 0.4.3.post2); later releases changed kernels (docs/hardware.md).
SGLANG_TRITON_MOE_RELEASES = ((0, 4, 0), (0, 4, 3))


def sglang_triton_moe(version: str | None) -> bool:
    """Whether SGLang ``version`` (``"0.4.3.post2"``) is in ``SGLANG_TRITON_MOE_RELEASES``; ``None``: current."""
    if version is None:
        return False
    low, high = SGLANG_TRITON_MOE_RELEASES
    return low <= _release(version, "sglang_version", "0.4.3 or 0.4.3.post2", 3) <= high


def _layer_split(
    arch: Architecture, spec: QuantSpec, *, runtime: str, context: int, batch: int, kv: str, gpus: int,
    flash_attention: bool, transformers_version: str | None = None, prompt: int | None = None,
) -> RuntimeMemory:
    g = arch.param_groups()
    p = context if prompt is None else prompt  # the prompt is one forward pass; the rest decodes a token a step
    emb_bits = spec.embedding_bits
    embed = round(g["embedding"] * emb_bits / 8)
    out_params = arch.vocab_size * arch.hidden_size  # llama.cpp duplicates a tied output onto the GPU
    output = round((g["lm_head"] if runtime == "hf" else out_params) * emb_bits / 8)
    body = weight_bytes(arch, spec) - embed - round(g["lm_head"] * emb_bits / 8)
    per_layer = body / arch.num_hidden_layers
    act_b = 2.0 if spec.compute_dtype in ("bf16", "fp16") else dtype_bytes(spec.compute_dtype)
    blocks = _split(arch.num_hidden_layers, gpus)
    rows = []
    for i, layers in enumerate(blocks):
        last, first = i == gpus - 1, i == 0
        w = per_layer * len(layers) + (output if last else 0) + (embed if first and runtime == "hf" else 0)
        if runtime == "hf" and arch.is_mla:
            kv_b = hf_mla_kv_per_token_layer(arch, kv) * _layer_tokens(arch, context, layers) * batch
        else:
            kv_b = arch.kv_cache_bytes_per_token_per_layer(kv) * _layer_tokens(arch, context, layers) * batch
            kv_b += _state_bytes(arch, layers, batch, kv)
        if runtime == "llama.cpp":
            u = min(LLAMA_CPP_UBATCH, context * batch)
            widths = [2 * arch.intermediate_size + 2 * arch.hidden_size, arch.vocab_size if last else 0]
            if not flash_attention:
                widths.append(arch.num_attention_heads * context)
            act = 4 * u * max(widths)
            over = CUDA_CONTEXT_BYTES
        else:
            tokens = p * batch
            whole = runtime == "hf" and full_prompt_logits(transformers_version)
            n_logits = (tokens if whole else batch) if last else 0
            act = prefill_activation_bytes(arch, tokens, 1, logits_rows=n_logits, act_bytes=act_b,
                                           logits_bytes=6.0 if whole else 4.0)
            if not flash_attention:
                act += max(eager_scores_bytes(arch, batch, p, p, 1, act_b),
                           eager_scores_bytes(arch, batch, 1, context, 1, act_b))
            over = RUNTIME_OVERHEAD_BYTES
        rows.append((w + kv_b + act + over, int(w), int(kv_b), int(act), over))
    _total, w, kv_b, act, over = max(rows)
    rm = RuntimeMemory(w, kv_b, act, over, chunk=min(LLAMA_CPP_UBATCH, context * batch) if runtime == "llama.cpp"
                       else p * batch)
    if runtime == "llama.cpp":
        rm.notes.append(
            f"llama.cpp: {gpus} GPU(s) with layer split ({', '.join(str(len(b)) for b in blocks)} layers), "
            f"output matrix on the last GPU, token embeddings in host memory; compute buffer "
            f"{act / 2**20:,.0f} MiB (n_ubatch {LLAMA_CPP_UBATCH}, flash_attention={flash_attention}); "
            "no utilization cap"
        )
    else:
        rm.notes.append(
            f"transformers: the whole prompt ({p * batch:,} tokens) in one forward pass"
            + (f"; device_map='auto' splits {arch.num_hidden_layers} layers over {gpus} GPUs" if gpus > 1 else "")
            + ("" if flash_attention else "; eager attention (no FlashAttention): one layer's scores "
               f"{eager_scores_bytes(arch, batch, p, p, 1, act_b) / GB:.2f} GB")
        )
        if arch.is_mla:
            ratio = hf_mla_kv_per_token_layer(arch, kv) / arch.kv_cache_bytes_per_token_per_layer(kv)
            rm.notes.append(f"transformers caches MLA keys/values uncompressed: {ratio:.1f}x the latent cache")
    return rm


def runtime_memory(
    arch: Architecture,
    spec: QuantSpec,
    *,
    runtime: str,
    context: int,
    batch: int,
    kv: str,
    tensor_parallel: int,
    prefill_chunk: int | None,
    flash_attention: bool,
    max_num_batched_tokens: int | None,
    gpu_memory_gb: float | None,
    gpu_name: str | None,
    gpu_memory_utilization: float | None,
    vllm_version: str,
    transformers_version: str | None = None,
    prompt: int | None = None,
    mlx_lm_version: str | None = None,
) -> RuntimeMemory:
    """Per-GPU weights, KV, activations and overhead of ``runtime`` (see the module docstring); ``prompt``:
    the prompt's share of ``context`` (transformers' one forward pass, MLX's prompt steps; default all of it)."""
    tp = tensor_parallel
    if uses_layer_split(runtime):
        return _layer_split(arch, spec, runtime=runtime, context=context, batch=batch, kv=kv, gpus=tp,
                            flash_attention=flash_attention, transformers_version=transformers_version,
                            prompt=prompt)
    w_gpu = math.ceil(weight_bytes(arch, spec) / tp)
    kv_gpu = arch.kv_cache_bytes(context, batch, kv, tp)
    if runtime == "vllm":
        prof = vllm_profile(vllm_version)
        util = prof.gpu_memory_utilization if gpu_memory_utilization is None else gpu_memory_utilization
        if max_num_batched_tokens is not None:
            tokens = max_num_batched_tokens
        elif prof.chunked_prefill:
            tokens = vllm_default_batched_tokens(gpu_memory_gb, gpu_name)
        else:
            tokens = max(context, prof.max_num_batched_tokens)
        act = prefill_activation_bytes(arch, tokens, tp, logits_rows=2 * prof.max_num_seqs)
        moe_peak = fp8_moe_profile_bytes(arch, tokens, spec.weight_dtype, prof)
        act += moe_peak
        non_torch = prof.non_torch_bytes_tp if tp > 1 else prof.non_torch_bytes
        rm = RuntimeMemory(w_gpu, kv_gpu, act, non_torch + prof.cuda_graph_bytes, chunk=tokens)
        rm.notes.append(
            f"vLLM {prof.name}: profile pass of {tokens:,} tokens, {prof.block_size}-token blocks, "
            f"gpu_memory_utilization {util:g}; {prof.description}"
        )
        if moe_peak:
            rm.notes.append(f"vLLM's profile pass of an FP8 MoE peaks {moe_peak / GIB:.2f} GiB above the dense working "
                            "set (measured on Qwen3-235B-A22B-FP8, vllm issue #21348)")
        if gpu_memory_gb is not None:
            cap = vllm_capacity(arch, weights_per_gpu=w_gpu, activation_peak=act, kv_dtype=kv, tensor_parallel=tp,
                                context=context, batch=batch, gpu_memory_gb=gpu_memory_gb,
                                gpu_memory_utilization=util, profile=prof)
            rm.vllm = cap
            rm.kv_cache = cap.requested_blocks * cap.block_bytes
            if not cap.fits:
                rm.warnings.append(f"vLLM pool of {cap.num_gpu_blocks:,} blocks cannot hold {batch} x {context:,} "
                                   f"tokens ({cap.requested_blocks:,} blocks)")
        else:
            rm.notes.append("pass gpu_memory_gb (or call fits(gpu)) to get vLLM's KV block count")
        return rm
    if runtime == "sglang":
        frac = sglang_mem_fraction(tp) if gpu_memory_utilization is None else gpu_memory_utilization
        tokens = max_num_batched_tokens or SGLANG_CHUNKED_PREFILL
        act = prefill_activation_bytes(arch, min(tokens, context * batch), tp, logits_rows=batch)
        rm = RuntimeMemory(w_gpu, kv_gpu, act, RUNTIME_OVERHEAD_BYTES, chunk=tokens, static_fraction=frac)
        rm.notes.append(
            f"SGLang: weights + KV pool + CUDA context within mem_fraction_static {frac:g}; the prefill "
            f"chunk ({tokens:,} tokens) and CUDA graphs use the other {1 - frac:.2f}"
        )
        return rm
    if runtime == "mlx":
        mlx = mlx_memory(arch, spec, context=context, batch=batch, kv=kv, prompt=context if prompt is None else prompt,
                         prefill_chunk=prefill_chunk, mlx_lm_version=mlx_lm_version)
        return RuntimeMemory(mlx.weights, mlx.kv_cache, mlx.activations, 0, chunk=mlx.step, notes=mlx.notes)
    chunk = min(context * batch, prefill_chunk or context * batch)
    act = prefill_activation_bytes(arch, chunk, tp, logits_rows=batch)
    if not flash_attention:
        act += eager_scores_bytes(arch, batch, min(chunk, context), context, tp, 2.0)
    rm = RuntimeMemory(w_gpu, kv_gpu, act, RUNTIME_OVERHEAD_BYTES, chunk=chunk)
    rm.notes.append(
        f"prefill processed in chunks of {chunk:,} tokens; runtime overhead = CUDA context 512 MiB + cuBLAS "
        f"workspace 32 MiB per GPU" + ("" if flash_attention else "; eager attention scores counted")
    )
    return rm

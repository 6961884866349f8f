"""vLLM mode: how many KV-cache blocks (and tokens) fit after weights, profiling peak and runtime buffers."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .._exceptions import InvalidRequestError
from ._architecture import Architecture
from ._common import GB, GIB

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "VLLM_FP8_MOE_PROFILE_BYTES",
    "VLLM_PROFILES",
    "VLLMCapacity",
    "VLLMProfile",
    "fp8_moe_profile_bytes",
    "vllm_capacity",
    "vllm_profile",
]


@dataclass(frozen=True)
class VLLMProfile:
    """Version-pinned defaults and runtime buffers of one vLLM memory profiler."""

    name: str
    gpu_memory_utilization: float
    block_size: int
    max_num_batched_tokens: int  # tokens in the profiling forward pass
    max_num_seqs: int  # sequences whose logits the profiling sampler materializes
    non_torch_bytes: int  # memory outside the PyTorch allocator counted by the profiler, TP = 1
    non_torch_bytes_tp: int  # the same per GPU when TP > 1 (NCCL / all-reduce buffers)
    cuda_graph_bytes: int  # CUDA-graph pool the profiler subtracts
    description: str
    source: str
    chunked_prefill: bool = True  # False: the profile pass runs max(max_model_len, max_num_batched_tokens) tokens
    marlin: bool = True
    """AWQ/GPTQ INT4 run through Marlin kernels on compute capability 8.0+ (GPTQ from vLLM 0.4.1, PR #3922;
    AWQ from 0.5.3, PR #6612); False for releases before them, whose AWQ/GPTQ GEMM kernels are slower."""
    awq_marlin: bool = True
    """AWQ too runs through Marlin (vLLM 0.5.3+, PR #6612); False where only GPTQ has it (0.4.1-0.5.2)."""
    flash_decode: bool = True
    """Decode attention through FlashAttention (PR #3648), which reads each KV head once for its whole query
    group; False for vLLM's own paged-attention v1/v2 kernel (0.2-0.4.2), one thread block per query head."""
    async_scheduling: bool = False
    """The engine schedules step N+1 while the GPU runs step N, so the per-step host work overlaps the GPU
    instead of following it (V1 with async scheduling, the default from vLLM 0.14, PR #27614)."""
    triton_moe: bool = False
    """MoE with more than 128 routed experts in block FP8 (DeepSeek-V3/R1) runs Triton's fused MoE, as the
    V0 engine's releases that published DeepSeek rows did (0.7.x); the speed model adds its fixed cost per
    MoE layer (``_overheads.TRITON_MOE_LAYER_S``)."""


#: The V1 engine's current defaults (0.14+): chunked prefill, CUDA graphs sized before the KV pool, async scheduling.
_V1 = VLLMProfile(
    "v1",
    0.9,
    16,
    8192,
    256,
    int(0.15 * GIB),
    int(0.6 * GIB),
    int(0.5 * GIB),
    "vLLM V1 engine (0.14+): KV = total x util - (weights + torch activation peak of profile_run + "
    "non-torch increase + CUDA-graph estimate); the CUDA context sits in the (1 - util) headroom. Scheduling "
    "runs one step ahead of the GPU (async scheduling, the default from 0.14).",
    "vllm/v1/worker/gpu_worker.py determine_available_memory; non-torch 0.09-0.65 GiB and CUDA graphs "
    "0.4-1.0 GiB as printed by vLLM DEBUG memory-profiling logs; async scheduling on by default from v0.14.0 "
    "(vllm-project/vllm PR #27614)",
    async_scheduling=True,
)
#: The vLLM release whose rules apply when none is given (the V1 engine, 0.14 and later): the one definition the
#: estimator, the planner, the CLI and the docs read.
DEFAULT_VLLM_VERSION = _V1.name

# vLLM V0 engine (0.6-0.10, VLLM_USE_V1=0) with chunked prefill off (its default up to 32k context): the
# profile pass runs max(max_model_len, 2048) tokens; CUDA graphs are captured after the KV pool is sized.
_V0 = replace(
    _V1,
    name="v0",
    max_num_batched_tokens=2048,
    cuda_graph_bytes=0,
    description="vLLM V0 engine without chunked prefill: profile_run over max(max_model_len, 2048) tokens, so "
    "long contexts cost a large activation peak; CUDA graphs come out of the (1 - util) headroom.",
    source="vllm/config.py SchedulerConfig (max_num_batched_tokens = max(max_model_len, 2048) when chunked "
    "prefill is off); vllm/worker/worker.py determine_num_available_blocks",
    chunked_prefill=False,
    async_scheduling=False,
    triton_moe=True,
)
# vLLM 0.2.5 before PR #2031: the profiler counted only PyTorch's peak (max_memory_allocated).
_V025_PRE = replace(
    _V0,
    name="0.2.5-pre",
    non_torch_bytes=0,
    non_torch_bytes_tp=0,
    description="vLLM up to 0.2.4: peak = torch.cuda.max_memory_allocated() after profile_run (PyTorch memory only).",
    source="vllm-project/vllm PR #2031 (2023-12-12): 'current main' 7,449 and 31,615 GPU blocks",
    marlin=False,
    flash_decode=False,
    triton_moe=False,
)

VLLM_PROFILES: dict[str, VLLMProfile] = {
    _V1.name: _V1,
    # The V1 engine before async scheduling became its default (0.8-0.13): memory as `v1`, the per-step host
    # work between GPU steps.
    "0.8": replace(
        _V1,
        name="0.8",
        description="vLLM V1 engine 0.8-0.13: memory as `v1`; the scheduler runs between GPU steps (async "
        "scheduling was opt-in, --async-scheduling, PR #19970).",
        source=_V1.source + "; vllm-project/vllm PR #19970 (--async-scheduling, experimental, 2025-06)",
        async_scheduling=False,
    ),
    "0.2.5-pre": _V025_PRE,
    # vLLM 0.2.5 after PR #2031: total - free, so memory outside PyTorch counts too. The non-PyTorch sizes are
    # what that PR measured: the drop in blocks when the profiler began counting it (7,449 -> 7,351 blocks of
    # 8 MiB at TP1; 31,615 -> 20,865 blocks of 1.25 MiB per GPU at TP4).
    "0.2.5": replace(
        _V025_PRE,
        name="0.2.5",
        non_torch_bytes=(7449 - 7351) * 16 * 524_288,
        non_torch_bytes_tp=(31615 - 20865) * 16 * 81_920,
        description="vLLM 0.2.5 after PR #2031: peak = total - free after profile_run, so non-PyTorch memory (NCCL "
        "and the like) counts. Its size per GPU is the one PR #2031 measured (0.77 GiB at TP1, 13.1 GiB at TP4); "
        "the PyTorch side is this estimator's own (checked by the '0.2.5-pre' profile against the pre-fix counts).",
        source="vllm-project/vllm PR #2031 (2023-12-12): 7,449 -> 7,351 and 31,615 -> 20,865 GPU blocks",
    ),
    "v0": _V0,
    # vLLM 0.4.1-0.5.2: the same V0 profiler without chunked prefill, and GPTQ through Marlin (0.4.1, PR #3922)
    # while AWQ still runs its own GEMM kernel (awq_marlin arrived in 0.5.3, PR #6612).
    "0.4": replace(
        _V0,
        name="0.4",
        description="vLLM 0.4.1-0.5.2 (V0 engine, no chunked prefill): memory as `v0`; GPTQ INT4 through Marlin, "
        "AWQ through its older GEMM kernel; decode attention through the paged-attention kernel of 0.4.1/0.4.2.",
        source="vllm-project/vllm PR #3922 (GPTQ Marlin, 0.4.1), PR #6612 (AWQ Marlin, 0.5.3) and PR #3648 "
        "(FlashAttention decode, after 0.4.2); vllm/worker/worker.py determine_num_available_blocks",
        awq_marlin=False,
        flash_decode=False,
        triton_moe=False,
    ),
}


#: Bytes the V1 engine's profile pass of an FP8 mixture-of-experts model holds beyond the dense working set, per
#: profile token, routed expert slot (``num_experts_per_tok``) and hidden unit. Measured, not modelled (as PR
#: #2031's non-PyTorch memory above): vllm-project/vllm issue #21348 serves Qwen3-235B-A22B-FP8 with TP 4 on 4x
#: H100 (79.11 GiB, gpu_memory_utilization 0.9, 8,192 profile tokens) and logs "Available KV cache memory: 8.11
#: GiB" (178,880 tokens). With 55.04 GiB of weights, 0.6 GiB non-PyTorch and 0.5 GiB of CUDA graphs per GPU that
#: leaves a 6.95 GiB profile peak, 6.40 GiB above the 0.56 GiB dense working set: 6.40 GiB / (8,192 x 8 x 4,096)
#: = 25.6 bytes. vLLM's own PR #54848 describes the cause: the profile reserves MoE headroom as if every expert
#: were active. Only FP8 MoE is measured; BF16 MoE keeps the dense working set.
VLLM_FP8_MOE_PROFILE_BYTES = 25.6


def fp8_moe_profile_bytes(arch: Architecture, tokens: int, weight_dtype: str, profile: VLLMProfile) -> int:
    """The extra profile-pass peak of an FP8 MoE model under the V1 engine (``VLLM_FP8_MOE_PROFILE_BYTES``); 0
    for dense models, other weight formats and the V0-era profiles (no measurement)."""
    if not (arch.is_moe and weight_dtype.startswith("fp8") and profile.chunked_prefill):
        return 0
    return int(tokens * arch.num_experts_per_tok * arch.hidden_size * VLLM_FP8_MOE_PROFILE_BYTES)


def vllm_profile(name: str) -> VLLMProfile:
    """Look up a vLLM profiler profile by name (``"v1"`` or ``"0.2.5"``)."""
    try:
        return VLLM_PROFILES[name]
    except KeyError:
        raise InvalidRequestError(
            f"unknown vllm_version {name!r}; use one of {', '.join(VLLM_PROFILES)}",
            field="vllm_version",
        ) from None


@dataclass(frozen=True)
class VLLMCapacity:
    """What vLLM would allocate on one GPU: the KV pool in blocks and tokens, and how it was derived."""

    profile: str
    gpu_memory_gb: float
    gpu_memory_utilization: float
    budget_gb: float  # total x utilization
    weights_gb: float
    activation_peak_gb: float
    non_torch_gb: float
    cuda_graph_gb: float
    kv_cache_gb: float  # pool size: num_gpu_blocks x block bytes
    block_size: int
    block_bytes: int  # one block on one GPU, all layers
    num_gpu_blocks: int
    kv_cache_tokens: int
    requested_blocks: int  # blocks the requested batch x context needs
    max_concurrency: float  # requests of the requested context the pool holds at once

    @property
    def fits(self) -> bool:
        """True when the pool holds the requested batch at the requested context."""
        return self.num_gpu_blocks > 0 and self.requested_blocks <= self.num_gpu_blocks


def vllm_capacity(
    arch: Architecture,
    *,
    weights_per_gpu: int,
    activation_peak: int,
    kv_dtype: str,
    tensor_parallel: int,
    context: int,
    batch: int,
    gpu_memory_gb: float,
    gpu_memory_utilization: float,
    profile: VLLMProfile,
) -> VLLMCapacity:
    """Compute vLLM's block count: ``(total x util - weights - peak - buffers) // block_bytes``."""
    total = gpu_memory_gb * GB
    budget = math.ceil(total * gpu_memory_utilization)
    non_torch = profile.non_torch_bytes_tp if tensor_parallel > 1 else profile.non_torch_bytes
    free = budget - weights_per_gpu - activation_peak - non_torch - profile.cuda_graph_bytes
    free -= arch.linear_state_bytes(batch, kv_dtype, tensor_parallel)  # linear-attention state of each sequence
    per_token = arch.kv_cache_bytes_per_token_per_layer(kv_dtype, tensor_parallel) * arch.num_attention_layers
    block_bytes = int(per_token * profile.block_size)
    blocks = max(0, free // block_bytes)
    per_seq_tokens = context
    win = arch.windowed_layers()
    if win and len(win) == arch.num_attention_layers and arch.sliding_window:
        per_seq_tokens = min(context, arch.sliding_window - 1)
    per_seq_blocks = math.ceil(per_seq_tokens / profile.block_size)
    return VLLMCapacity(
        profile=profile.name,
        gpu_memory_gb=gpu_memory_gb,
        gpu_memory_utilization=gpu_memory_utilization,
        budget_gb=budget / GB,
        weights_gb=weights_per_gpu / GB,
        activation_peak_gb=activation_peak / GB,
        non_torch_gb=non_torch / GB,
        cuda_graph_gb=profile.cuda_graph_bytes / GB,
        kv_cache_gb=blocks * block_bytes / GB,
        block_size=profile.block_size,
        block_bytes=block_bytes,
        num_gpu_blocks=blocks,
        kv_cache_tokens=blocks * profile.block_size,
        requested_blocks=per_seq_blocks * batch,
        max_concurrency=blocks / per_seq_blocks,
    )

"""Per-step costs a serving runtime adds to the decode roofline (speed model v2).

A decode step is not only the weight and KV read. Each runtime adds work that does not shrink with the
model: the scheduler, input preparation and sampling on the host (vLLM, SGLang), kernel launches and the
minimum duration of the many small kernels of each layer (llama.cpp, MLX), and in eager PyTorch
(transformers) a Python host that issues every layer's kernels one by one and is slower than the GPU.

The model, per decode step on one replica::

    t_gpu  = max(t_mem, t_compute) + t_comm + layers * layer_s(runtime, backend)
             (+ moe_layers * TRITON_MOE_LAYER_S in the Triton fused-MoE releases, ``_speed.triton_moe_path``)
    t_host = layers * host_layer_s + moe_layers * experts * host_expert_s
             + linears * host_linear_s                                         (transformers only)
    t_step = max(t_gpu, t_host) + step_s(runtime)
    t_step = max(t_gpu, t_host + step_s(runtime))                              (vLLM 0.14+, async scheduling)

``step_s`` and ``layer_s`` are per runtime; llama.cpp and MLX have one value per backend (CUDA,
ROCm/HIP, Metal); vLLM's release (``VLLMProfile.async_scheduling``) decides whether its host step follows the
GPU's or overlaps it. Mixture-of-experts layers spread over GPUs add an expert-parallel dispatch and combine
(``EP_DISPATCH_COMBINE_S``) instead of the tensor-parallel all-reduce. Every constant is in
``OVERHEAD_SOURCES`` (and docs/hardware.md) with where it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EP_DISPATCH_COMBINE_S",
    "OVERHEAD_SOURCES",
    "TRITON_MOE_EXPERTS",
    "TRITON_MOE_LAYER_S",
    "RuntimeCost",
    "backend_of",
    "runtime_cost",
]


@dataclass(frozen=True)
class RuntimeCost:
    """Fixed costs of one decode step: ``step_s`` per step, ``layer_s`` per decoder layer on the GPU's
    timeline, and ``host_layer_s`` per layer for a host that issues kernels eagerly (``t = max(gpu, host)``),
    plus ``host_expert_s`` per routed expert of each MoE layer for a host that loops over the experts, and
    ``host_linear_s`` per linear layer a step runs where each launches extra kernels from Python."""

    step_s: float = 0.0
    layer_s: float = 0.0
    host_layer_s: float = 0.0
    host_expert_s: float = 0.0
    host_linear_s: float = 0.0


#: vLLM 0.6 with CUDA graphs: one scheduler/prepare/sample round trip per step, independent of the model. From
#: vLLM 0.14 (async scheduling) it overlaps the GPU's step instead of following it (``_roofline``, ``step_overlap``).
VLLM = RuntimeCost(step_s=2.5e-3)
#: SGLang 0.4 (CUDA graphs, overlap scheduler): a smaller host share per step.
SGLANG = RuntimeCost(step_s=1.5e-3)
#: transformers ``generate`` in eager mode: the Python host issues each layer's kernels (0.75 ms a layer);
#: AutoAWQ's GEMM path launches more per layer (1.0 ms). Its MoE blocks loop over every routed expert of
#: each MoE layer in Python (80 us an expert), whether or not a token was routed to it.
HF = RuntimeCost(step_s=1.0e-3, host_layer_s=0.75e-3, host_expert_s=80e-6)
HF_AWQ = RuntimeCost(step_s=1.0e-3, host_layer_s=1.0e-3, host_expert_s=80e-6)
#: One Triton kernel launch from Python (Triton 3.0+, after triton-lang/triton PR #3638).
TRITON_LAUNCH_S = 49e-6
#: transformers' block-FP8 linear (``integrations/finegrained_fp8.py``): two Triton launches per linear,
#: the activation quantizer and the block-FP8 matmul.
HF_FP8 = RuntimeCost(step_s=1.0e-3, host_layer_s=0.75e-3, host_expert_s=80e-6, host_linear_s=2 * TRITON_LAUNCH_S)
#: llama.cpp per backend: per-layer kernel floor on the GPU timeline.
LLAMA_CPP = {
    "cuda": RuntimeCost(step_s=0.0, layer_s=60e-6),
    "rocm": RuntimeCost(step_s=0.0, layer_s=90e-6),
    "metal": RuntimeCost(step_s=0.0, layer_s=155e-6),
    "other": RuntimeCost(step_s=0.0, layer_s=90e-6),
}
#: MLX (Metal): lazy graphs fuse element-wise work, so fewer dispatches than llama.cpp's Metal graph.
MLX = RuntimeCost(step_s=0.0, layer_s=100e-6)
#: The default runtime is a compiled, CUDA-graph decode loop (gpt-fast): no measurable fixed cost.
DEFAULT = RuntimeCost()

#: Triton fused MoE with block-FP8 weights and more than 128 routed experts, tensor-parallel over GPUs (vLLM's V0
#: engine, SGLang 0.4.0-0.4.3): a fixed GPU cost per MoE layer per step, fitted on the published DeepSeek rows
#: (``OVERHEAD_SOURCES["triton_moe_layer"]``); the leave-one-source-out check refits it without the held-out rows.
TRITON_MOE_LAYER_S = 510e-6
#: The term applies above this many routed experts: Qwen3-235B-A22B (128 experts, FP8) under SGLang 0.4.6 is
#: within ±10 % without it.
TRITON_MOE_EXPERTS = 128

#: Expert-parallel dispatch + combine of one MoE layer at decode batch sizes (DeepEP low-latency
#: kernels, EP8: 77 us dispatch + 114 us combine).
EP_DISPATCH_COMBINE_S = 191e-6

OVERHEAD_SOURCES: dict[str, str] = {
    "vllm_step": "2.5 ms per step: Qwen2.5 speed benchmark, vLLM 0.6.3 on A100-80GB, Qwen2.5-0.5B BF16 decodes at "
    "311.55 tok/s (3.21 ms a step) although its ~1 GB of weights stream in 0.7 ms; the remainder is the "
    "per-step host work (scheduler, input preparation, sampling) that vLLM's v0.6 performance post "
    "(https://blog.vllm.ai/2024/09/05/perf-update.html) describes as the main cost of small-model decode "
    "(https://github.com/QwenLM/Qwen2.5/blob/010c37c/docs/source/benchmark/speed_benchmark.rst).",
    "vllm_async_scheduling": "vLLM's per-step host work overlaps the GPU from v0.14.0: 'Async scheduling is now "
    "enabled by default ... Overlaps engine core scheduling with GPU execution' (release notes, vllm-project/vllm "
    "PR #27614; the scheduler runs one step ahead of the GPU, PR #19970, https://github.com/vllm-project/vllm/"
    "pull/19970). A step then takes max(GPU, host) instead of GPU + host: vllm_version 'v1' (0.14+); '0.8' (V1 "
    "0.8-0.13), 'v0', '0.4' and '0.2.5' keep the sum.",
    "sglang_step": "1.5 ms per step: Qwen3 speed benchmark, SGLang 0.4.6 on H20, Qwen3-0.6B BF16 at 414.17 "
    "tok/s (2.41 ms a step, of which 0.5-0.9 ms is the weight read); SGLang overlaps its scheduler with the "
    "GPU (https://lmsys.org/blog/2024-12-04-sglang-v0-4/), so its share is below vLLM's "
    "(https://github.com/QwenLM/Qwen3/blob/c7f51a1/docs/source/getting_started/speed_benchmark.md).",
    "hf_host_layer": "0.75 ms per decoder layer, host-bound: the smallest models of both Qwen speed tables, "
    "where the weight read is negligible: Qwen2.5-0.5B BF16 47.40 tok/s over 24 layers (0.88 ms/layer, "
    "transformers 4.46, A100) and Qwen3-0.6B BF16 58.57 tok/s over 28 layers (0.61 ms/layer, transformers "
    "4.51, H20); 0.75 is their middle. AutoAWQ: Qwen2.5-0.5B AWQ 37.09 tok/s = 1.12 ms/layer, Qwen3-4B AWQ "
    "0.54 ms/layer: 1.0 ms. Eager PyTorch launches each kernel from Python, so the step takes the longer of "
    "the GPU time and the host time.",
    "hf_expert_loop": "80 us per routed expert per MoE layer: transformers' eager MoE blocks (Mixtral, Qwen-MoE) "
    "loop over all experts in Python, one mask lookup and a host sync each, whatever the batch. From Qwen's "
    "transformers table for Qwen1.5 on an A100 (https://github.com/QwenLM/Qwen2.5/blob/14544eb/docs/source/"
    "benchmark/hf_infer.rst): Qwen1.5-MoE-A2.7B 8.49 tok/s over 24 layers x 60 experts leaves 69 us an "
    "expert after 0.75 ms a layer; Qwen2's table (Qwen2-57B-A14B, 28 x 64 experts: GPTQ-Int4 5.55 tok/s on "
    "one A100, BF16 4.76 on two) leaves 88 and 105 us; 80 us is their middle.",
    "hf_fp8_linear": "2 x 49 us per linear layer for FP8 checkpoints under transformers: its block-FP8 "
    "FP8Linear (src/transformers/integrations/finegrained_fp8.py) quantizes the activation and multiplies in "
    "two Triton kernels launched from Python, and a Triton launch costs 49 us on the host after "
    "triton-lang/triton PR #3638 (https://github.com/triton-lang/triton/pull/3638: 108 -> 49 us; PR #3503 "
    "measured 40-62 us) while the step is host-bound.",
    "hf_step": "1 ms per step for generate()'s logits processing and sampling (assumption, small next to the "
    "per-layer host time).",
    "llama_cpp_cuda": "60 us per layer (about 2 ms a step for 32 layers): llama-bench tg128 on an RTX 4090 "
    "(ggml-org/llama.cpp PR #4766: 7B F16 61.03, Q8_0 98.13 tok/s) leaves 1-2 ms a token beyond the weight "
    "read at the GGUF efficiency; the issue's audit of held-back A100/H100 rows found +74-105 % without a "
    "per-step cost of about 2-3.5 ms.",
    "llama_cpp_metal": "155 us per layer (5 ms a step for 32 layers): the intercept of step time against bytes "
    "read across F16, Q8_0 and Q4_0 on the same chip in llama.cpp's Apple-silicon table "
    "(https://github.com/ggml-org/llama.cpp/discussions/4167, LLaMA 7B tg128: M2 Ultra 41.02/66.64/94.27, "
    "M4 Max 31.64/54.05/83.06 tok/s give 4.4-6.0 ms intercepts and 0.8-0.9 of the memory bandwidth as the slope).",
    "llama_cpp_rocm": "90 us per layer: 1.5x the CUDA figure for HIP's higher launch latency (assumption).",
    "mlx_layer": "100 us per layer: MLX compiles element-wise chains into fewer Metal dispatches than "
    "llama.cpp's graph (assumption between the CUDA-graph and llama.cpp Metal figures; "
    "https://github.com/ml-explore/mlx-lm).",
    "triton_moe_layer": "510 us per MoE layer, fitted (summed absolute log error, 10 us grid, every other "
    "constant shipped) on the 15 published decode rows of DeepSeek-class FP8 (256 routed experts) on 8 x H200 "
    "with tensor-parallel experts in Triton's fused MoE: SGLang PR #2643 (DeepSeek-V3, SGLang 0.4.1.post2, batch "
    "1/8/32, https://github.com/sgl-project/sglang/pull/2643) and dstack's benchmark (DeepSeek-R1, SGLang "
    "0.4.3.post2 and vLLM 0.7.4 V0, concurrency 4-128, https://github.com/dstackai/benchmarks/blob/7f37e66/"
    "Deepseek-R1/raw_data/online_results.csv). Each alone gives 420 and 530 us; no published per-kernel cost of "
    "that path accounts for it (docs/estimator.md, 'SGLang PR #2643').",
    "ep_dispatch_combine": "191 us per MoE layer across GPUs: DeepEP low-latency kernels at EP8, dispatch 77 us + "
    "combine 114 us (https://github.com/deepseek-ai/DeepEP README, H800, 128 tokens per batch, 7,168 hidden, "
    "top-8); used instead of an all-reduce when routed experts are spread over GPUs.",
    "apple_bandwidth": "0.85 of the memory bandwidth on Apple silicon (unified LPDDR5): the slope of the same "
    "regression over discussion #4167 (0.79-0.95 across M1 Ultra, M2 Ultra, M3 Ultra, M3 Max, M4 Max).",
}


def backend_of(vendor: str) -> str:
    """llama.cpp / MLX backend for a GPU vendor: ``cuda``, ``rocm``, ``metal`` or ``other``."""
    return {"nvidia": "cuda", "amd": "rocm", "apple": "metal"}.get(vendor, "other")


def runtime_cost(runtime: str, vendor: str, *, awq: bool = False, fp8: bool = False) -> RuntimeCost:
    """The fixed per-step costs of ``runtime`` on a GPU of ``vendor`` (see the module docstring); ``awq`` and
    ``fp8`` pick transformers' AutoAWQ host and its Triton block-FP8 linears."""
    if runtime == "vllm":
        return VLLM
    if runtime == "sglang":
        return SGLANG
    if runtime == "hf":
        return HF_AWQ if awq else HF_FP8 if fp8 else HF
    if runtime == "llama.cpp":
        return LLAMA_CPP[backend_of(vendor)]
    if runtime == "mlx":
        return MLX
    return DEFAULT

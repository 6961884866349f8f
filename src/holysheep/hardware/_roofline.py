"""Roofline throughput estimates: decode (bandwidth bound), prefill and training (compute bound).

Decode, per step for a batch of B sequences on T devices::

    bytes_step = W_read + B * kv_bytes_per_token * context          (weights + the KV that is read)
    t_mem      = bytes_step / (T * bandwidth * eta_bw)
    t_compute  = 2 * N_active * B / (T * dense_peak * mfu_decode)
    t_comm     = layers * 2 * allreduce(T, link) (+ MoE dispatch/combine and routing per MoE layer,
                 + the Triton fused-MoE cost per MoE layer in the releases that run it)
    tokens/s   = B / (max(t_mem, t_compute) + t_comm)              (aggregate over the batch)

``eta_bw`` depends on the runtime and weight format (GGUF on llama.cpp, Marlin INT4 on vLLM/SGLang,
AWQ/GPTQ elsewhere). The all-reduce latency falls with the link class (NVLink/NVSwitch, NVLink bridge
beyond its pair, PCIe) and grows with log2(T); see ``_speed``. A layer split (llama.cpp, transformers)
runs GPUs one after another: ``t_mem`` is the whole read at one device's bandwidth, plus a hop per boundary.
Mixture-of-experts: by default the experts are tensor-parallel, as vLLM and SGLang run them unless asked
otherwise (every GPU reads 1/T of each touched expert, no extra collective); with expert parallelism
(``expert_parallel``) the step waits for the GPU that drew the most of a token's experts, plus an
all-to-all dispatch and combine per MoE layer.

Prefill: ``T * dense_peak * mfu / (2 * N_active + 2 * layers * d_attn * L)`` tokens/s at prompt
length L (the causal attention term: +54 % at 32k for Llama-3.1-8B), minus the all-reduce traffic.
Training: ``T * dense_peak * mfu_train * link / (k * N)`` tokens/s, k = 6 (full) or 4 (LoRA/QLoRA),
where ``link`` is ``tp_fast_link`` inside one NVLink/fabric domain (an HGX board, an NVL72 rack, a bridged
pair) and ``tp_pcie`` over PCIe or the network between domains (8 GH200 superchips, 16 H100s).

``W_read`` is the whole weight size for dense models; for mixture-of-experts models without an
expert shape it is ``W * min(1, B * N_active / N)`` (each sequence touches its own experts), with one
it is the dense part plus the distinct experts ``E * (1 - (1 - k/E)^B)`` the batch touches. ``context`` is the full
window, so the decode figure is the speed at the *end* of a sequence (a conservative bound).
Without the layer count (``layers=0``) a flat ``Efficiencies.tp_fast_link`` / ``tp_pcie`` factor stands
in for the communication term (training keeps that factor). Every default has a source in
``EFFICIENCY_SOURCES`` (see docs/hardware.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..accelerators import GPU
from ._overheads import EP_DISPATCH_COMBINE_S, TRITON_MOE_LAYER_S, runtime_cost
from ._speed import MOE_LAYER_US, collective_s, expected_max_load, hop_s, link_kind, stream_bandwidth_gb_s

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
    bandwidth_gguf: float = 0.80
    """eta_bw of llama.cpp (and MLX) kernels once their per-layer cost is counted separately (speed model v2)."""
    bandwidth_int4_marlin: float = 0.60
    """eta_bw of AWQ/GPTQ INT4 through vLLM's / SGLang's Marlin kernels."""
    kv_read: float = 0.50
    """KV-cache reads stream at this fraction of the weight-stream efficiency where a step reads the cache more
    than once (eager transformers' copies, vLLM's paged kernel up to 0.4.2); one fused pass streams at eta."""

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
    "70B int8 TP2 73%; Databricks' LLM inference best-practices post defines MBU; 0.7 is the planning default "
    "(range 0.55-0.85).",
    "bandwidth_int4": "pytorch-labs/gpt-fast README: int4 weight-only decode at 863 GB/s (42%) on A100 "
    "(the dequant kernels do not saturate bandwidth); 0.45-0.6 for weight-only INT4.",
    "bandwidth_amd": "pytorch-labs/gpt-fast README: MI250X single GCD 1,029 of 1,638 GB/s (63%).",
    "mfu": "MFU 0.5 default, range 0.4-0.6 (MAMF ceilings 80-87% BF16 on A100/H100, "
    "stas00/ml-engineering; 76% large-batch prefill, Pope et al. arXiv:2211.05102).",
    "mfu_train": "Llama 3 paper arXiv:2407.21783: 380-430 TFLOPS/GPU = 38-43% MFU on H100 BF16.",
    "bandwidth_gguf": "llama.cpp llama-bench on an RTX 4090 (1,008 GB/s), ggml-org/llama.cpp PR #4766: 7B F16 "
    "tg128 61.03 t/s, Q8_0 98.13 t/s, i.e. 0.90 and 0.84 of spec once the per-layer cost (hardware/_overheads.py) "
    "is taken out; the slope of step time against bytes in llama.cpp's Apple-silicon table (discussion #4167) "
    "is 0.79-0.95 of spec: 0.8. MLX uses the same figure.",
    "bandwidth_int4_marlin": "IST-DASLab/marlin README (https://github.com/IST-DASLab/marlin): near-ideal 4x "
    "over FP16 at batch 1-32, so INT4 streams at close to the FP16 efficiency; 0.6 leaves room for vLLM's "
    "end-to-end overheads (vLLM docs, AWQ -> awq_marlin on compute capability 8.0+).",
    "kv_read": "Nsight profiling write-up (https://mikamirai.com/blog/gpu-memory-bandwidth/, third-party): "
    "coalesced weight streaming reaches about 84 % of an H100's 3.35 TB/s and paged KV-cache reads about 42 %, "
    "i.e. half; it matters where the KV read is a large share of a step (large batches, long contexts). "
    "Charged only where a step reads the cache more than once (eager transformers' copies, vLLM's paged "
    "kernel up to 0.4.2): one fused decode-attention pass streams at the weights' rate, as TensorRT-LLM "
    "0.5.0's KV-dominated LLaMA 7B rows (H100, L40S, A100, 2,048 generated tokens) show (issue 47).",
    "tp_fast_link": "Used only without a layer count and for training. Assumption (not measured): gpt-fast "
    "shows 70B TP2 at 73% bandwidth vs 68.5% at TP1, "
    "but 7B TP8 only 35%; 0.9 is a middle value for large shards over NVLink.",
    "tp_pcie": "Assumption (not measured): PCIe Gen4 x16 is 32 GB/s per direction vs 450 GB/s for NVLink4 "
    "(PCIe 4.0 specification; NVIDIA H100 datasheet), so all-reduce time is far larger; 0.6 is a planning value.",
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


def uses_marlin(gpu: GPU, runtime: str, *, marlin: bool = True) -> bool:
    """Whether INT4 AWQ/GPTQ decode runs through Marlin: vLLM/SGLang on NVIDIA compute capability 8.0+, in a
    release that has the kernels (``marlin``; vLLM before 0.4.1 / 0.5.3 has not)."""
    try:
        ampere = gpu.vendor == "nvidia" and float(gpu.compute_capability or "0") >= 8.0
    except ValueError:
        ampere = False
    return runtime in ("vllm", "sglang") and marlin and ampere


def bandwidth_efficiency(gpu: GPU, eff: Efficiencies, *, weight_only_int4: bool, runtime: str = "default",
                         marlin: bool = True) -> float:
    """eta_bw for this part, weight format and runtime: the lowest of the applicable efficiencies."""
    e = eff.bandwidth
    if runtime in ("llama.cpp", "mlx"):
        e = eff.bandwidth_gguf
    elif weight_only_int4:
        e = min(e, eff.bandwidth_int4_marlin if uses_marlin(gpu, runtime, marlin=marlin) else eff.bandwidth_int4)
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
    runtime: str = "default",
    layers: int = 0,
    hidden: int = 0,
    layer_split: bool = False,
    moe_experts: int = 0,
    moe_top_k: int = 0,
    moe_layers: int = 0,
    expert_bytes: float = 0.0,
    awq: bool = False,
    expert_parallel: bool = False,
    marlin: bool = True,
    kv_passes: float = 1.0,
    kv_repeats: float = 0.0,
    fp8: bool = False,
    linears: int = 0,
    step_overlap: bool = False,
    triton_moe: bool = False,
) -> float:
    """Aggregate decode tokens/s of ``batch`` sequences on ``count`` packages (see module docstring).

    ``layers`` and ``hidden`` enable the all-reduce term; ``layer_split`` models llama.cpp / transformers
    running GPUs in sequence; the ``moe_*`` and ``expert_bytes`` (one routed expert's bytes) arguments
    enable the mixture-of-experts model: tensor-parallel experts (each GPU reads its slice of every touched
    expert; the MoE output joins the per-layer all-reduce), or with ``expert_parallel`` whole experts per
    GPU (the most loaded GPU sets the pace, plus an all-to-all dispatch and combine per MoE layer). With
    ``layers`` the runtime's fixed costs are added
    (``_overheads.runtime_cost``: per step, per layer, and an eager host for transformers; ``awq`` selects
    AutoAWQ's host cost, ``fp8`` transformers' Triton FP8 linears, ``linears`` the linear layers one step runs).
    ``kv_passes`` is how many times the runtime's attention streams the KV cache from memory per step, at
    ``kv_read`` of eta (copies and expansions in eager transformers; one fused pass alone streams at eta),
    and ``kv_repeats`` how many more reads
    L2 serves at eta (old paged kernels, a block per query head); see ``_speed.kv_passes``. ``step_overlap``:
    the runtime's per-step host work runs while the GPU computes the step before (vLLM's async scheduling),
    so a step takes the longer of the two instead of their sum. ``triton_moe``: the runtime release runs
    many-expert block-FP8 MoE through Triton's fused MoE, which adds ``TRITON_MOE_LAYER_S`` per MoE layer on
    the GPU's timeline when the experts are tensor-parallel over several GPUs.
    """
    devices = count * gpu.devices_per_package
    eta = bandwidth_efficiency(gpu, eff, weight_only_int4=weight_only_int4, runtime=runtime, marlin=marlin)
    bandwidth = stream_bandwidth_gb_s(gpu)
    dev_bw = bandwidth * 1e9 / gpu.devices_per_package * eta
    kv_read = batch * kv_bytes_per_token * context * kv_passes
    kv_cached = batch * kv_bytes_per_token * context * kv_repeats
    comm = 0.0
    if moe_experts and moe_layers and expert_bytes:
        routed = moe_experts * moe_layers * expert_bytes
        distinct = moe_experts * (1 - (1 - moe_top_k / moe_experts) ** batch)
        if devices == 1 or layer_split:
            per_dev = weight_bytes - routed + moe_layers * distinct * expert_bytes + kv_read
        elif not expert_parallel:  # each GPU reads its 1/T slice of every expert the batch touches
            per_dev = (weight_bytes - routed + moe_layers * distinct * expert_bytes + kv_read) / devices
        else:
            picks = min(batch * moe_top_k, 64)
            load = min(moe_experts / devices, max(distinct / devices, expected_max_load(picks, devices)))
            per_dev = (weight_bytes - routed + kv_read) / devices + moe_layers * load * expert_bytes
            ep = EP_DISPATCH_COMBINE_S if link_kind(gpu, devices) == "switch" else 0.0
            comm += moe_layers * max(ep, 2 * collective_s(gpu, devices, batch * hidden * moe_top_k))
        comm += moe_layers * MOE_LAYER_US * 1e-6
        if triton_moe and devices > 1 and not layer_split and not expert_parallel:
            comm += moe_layers * TRITON_MOE_LAYER_S
    else:
        frac = 1.0 if params <= 0 else min(1.0, batch * active_params / params)
        per_dev = (weight_bytes * frac + kv_read) / (1 if layer_split else devices)
    # one fused decode-attention pass streams the cache like the weights; copies and per-head re-reads are slower
    slow = 0.0 if (kv_passes == 1 and kv_repeats == 0) else kv_read * (1 / eff.kv_read - 1)
    per_dev += (slow + kv_cached) / (1 if layer_split else devices)
    peak, _ = compute_peak(gpu, precision)
    if layers:
        t_mem = per_dev / dev_bw
        if layer_split:
            comm += (devices - 1) * hop_s(gpu, batch * hidden * 2)
            t_comp = 2 * active_params * batch / (peak * 1e12 * eff.mfu / gpu.devices_per_package) if peak else 0
        else:
            comm += layers * 2 * collective_s(gpu, devices, batch * hidden * 2)
            t_comp = 2 * active_params * batch / (count * peak * 1e12 * eff.mfu) if peak else 0
        cost = runtime_cost(runtime, gpu.vendor, awq=awq, fp8=fp8)
        t_gpu = max(t_mem, t_comp) + comm + layers * cost.layer_s
        t_host = (layers * cost.host_layer_s + moe_layers * moe_experts * cost.host_expert_s
                  + linears * cost.host_linear_s)
        if step_overlap:
            return batch / max(t_gpu, t_host + cost.step_s)
        return batch / (max(t_gpu, t_host) + cost.step_s)
    tp = _tp_factor(gpu, devices, eff)
    t_step = per_dev * devices / (count * bandwidth * 1e9 * eta * tp)
    if peak:
        t_step = max(t_step, 2 * active_params * batch / (count * peak * 1e12 * eff.mfu * tp))
    return batch / (t_step + comm)


def prefill_tokens_per_s(
    gpu: GPU, count: int, *, active_params: float, precision: str = "bf16", eff: Efficiencies = DEFAULT_EFFICIENCIES,
    prompt_tokens: int = 0, layers: int = 0, attention_dim: int = 0, hidden: int = 0, layer_split: bool = False,
) -> float | None:
    """Prompt tokens/s: dense peak x MFU / FLOPs per token; ``None`` if no compute peak is known.

    FLOPs per token are ``2 x active params`` plus, with ``layers`` and ``attention_dim`` (heads x head
    dim), the causal attention term ``2 x layers x attention_dim x prompt_tokens`` (QK^T and AV over, on
    average, half the prompt). With ``layers`` the tensor-parallel all-reduce traffic is added per token
    instead of the flat link factor; a ``layer_split`` runs one GPU at a time.
    """
    peak, _ = compute_peak(gpu, precision)
    if not peak or active_params <= 0:
        return None
    devices = count * gpu.devices_per_package
    flops = 2 * active_params + 2 * layers * attention_dim * prompt_tokens
    if not layers:
        tp = _tp_factor(gpu, devices, eff)
        return count * peak * 1e12 * eff.mfu * tp / flops
    if layer_split:
        return peak * 1e12 * eff.mfu / gpu.devices_per_package / flops
    t_tok = flops / (count * peak * 1e12 * eff.mfu)
    if devices > 1:
        chunk = max(prompt_tokens, 1)
        t_tok += layers * 2 * collective_s(gpu, devices, chunk * hidden * 2) / chunk
    return 1 / t_tok


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
    kind = link_kind(gpu, count * gpu.devices_per_package)
    link = 1.0 if kind == "local" else eff.tp_fast_link if kind in ("switch", "bridge") else eff.tp_pcie
    return count * peak * 1e12 * eff.mfu_train * link / (flops_per_param * active_params)

"""Multi-GPU costs for the roofline: link classes, collective latency, expert-parallel load, runtime efficiency.

Sources (also in ``SPEED_SOURCES`` and docs/hardware.md):

* All-reduce latency per collective on an NVLink fabric, ``12 + 6 x log2(T)`` microseconds, two per layer:
  fitted to pytorch-labs/gpt-fast's tensor-parallel table (https://github.com/pytorch-labs/gpt-fast, 8x
  A100-80GB, batch 1): Llama-2-7B decodes at 104.9 / 168.84 / 254.02 / 328.43 tok/s at TP 1/2/4/8, i.e.
  36 / 48 / 58 us of extra time per layer beyond the bandwidth term.
* PCIe-only and NVLink-bridge cards beyond their bridged pair: ``30 + 15 x log2(T)`` us per collective and a
  message bandwidth of 25 GB/s (Gen4 x16) or 50 GB/s (Gen5): an assumption, 2.5x the NVLink latency, as
  NCCL's ring over PCIe goes through host bridges (NVIDIA NCCL tests report tens of us for small messages).
* llama.cpp layer split: one hop per GPU boundary, 20 us plus the hidden state over PCIe; GPUs work one after
  another, so batch-1 speed does not grow with the GPU count (llama.cpp ``--split-mode layer`` docs).
* Expert parallelism: each GPU holds ``experts / T`` routed experts; at batch 1 the step waits for the GPU
  that drew the most of the token's ``k`` experts (expected maximum of a uniform draw), plus a dispatch and
  a combine per MoE layer (DeepSeek-V3 report arXiv:2412.19437 section 3.4: EP with all-to-all dispatch and
  combine) and ``MOE_LAYER_US`` of routing/permute kernels (an assumption: about ten small kernels at
  3-5 us each on a CUDA-graph replay).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from ..accelerators import GPU
from ..estimator._runtimes import sglang_triton_moe
from ..estimator._vllm import DEFAULT_VLLM_VERSION, vllm_profile
from ._overheads import TRITON_MOE_EXPERTS

__all__ = [
    "MOE_LAYER_US",
    "SM_STREAM_GB_S",
    "SPEED_SOURCES",
    "attention_dim",
    "collective_s",
    "embedding_bytes",
    "expected_max_load",
    "link_kind",
    "scale_up_domain",
    "kv_passes",
    "speed_shape",
    "stream_bandwidth_gb_s",
    "triton_moe_of",
    "triton_moe_path",
]

NVLINK_US = (12.0, 6.0)
PCIE_US = (30.0, 15.0)
HOP_US = 20.0
MOE_LAYER_US = 40.0
#: Streaming read bandwidth one Hopper SM draws: an H200 feeds 4,800 GB/s to 132 SMs (NVIDIA datasheets).
SM_STREAM_GB_S = 4800 / 132
_PCIE_GB_S = {3: 12.0, 4: 25.0, 5: 50.0, 6: 100.0}

SPEED_SOURCES: dict[str, str] = {
    "allreduce_nvlink": "fit to pytorch-labs/gpt-fast README tensor-parallel table (8x A100-80GB, batch 1): "
    "Llama-2-7B 104.9/168.84/254.02/328.43 tok/s at TP 1/2/4/8 -> 36/48/58 us per layer beyond the "
    "bandwidth term, i.e. two collectives of 12 + 6 log2(T) us; https://github.com/pytorch-labs/gpt-fast",
    "allreduce_pcie": "assumption: 2.5x the NVLink latency (30 + 15 log2(T) us) and 25 GB/s (PCIe Gen4 x16) "
    "or 50 GB/s (Gen5) for the message; NCCL rings over PCIe cross host bridges "
    "(https://github.com/NVIDIA/nccl-tests)",
    "network": "beyond a part's scale-up domain (8 GPUs on an HGX/OAM board, 72 in a GB200/GB300 NVL72 rack, "
    "one GH200 superchip) GPUs talk over the network: one 400 Gb/s NIC per GPU = 50 GB/s, with the PCIe "
    "latency (assumption; NVIDIA DGX H100 and GH200 reference designs pair each GPU or superchip with a 400 Gb/s "
    "ConnectX-7, https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html)",
    "nvlink_bridge": "NVLink bridges join pairs of cards (H100 NVL, A100 PCIe, RTX A6000; H200 NVL up to 4): "
    "larger groups fall back to PCIe between pairs (https://www.nvidia.com/en-us/data-center/h100/)",
    "layer_split": "llama.cpp --split-mode layer: GPUs run their layers one after another; one hop per "
    "boundary, 20 us + hidden state over PCIe (https://github.com/ggml-org/llama.cpp/blob/master/tools/main/README.md)",
    "expert_parallel": "DeepSeek-V3 technical report arXiv:2412.19437 section 3.4: expert parallelism with "
    "all-to-all dispatch/combine; step time set by the most loaded GPU (expected maximum of k uniform draws "
    "over T GPUs); 40 us of routing/permute kernels per MoE layer (assumption)",
    "sm_stream": "a part with fewer SMs than its memory system is sized for streams at most SMs x 36.4 GB/s, "
    "what each of an H200's 132 SMs draws at its 4.8 TB/s (NVIDIA H200 datasheet, "
    "https://www.nvidia.com/en-us/data-center/h200/): a memory read needs an SM to keep it in flight "
    "(Little's law), so the H20's 78 SMs (Geekbench 6 listing) reach about 2.8 of its 4.0 TB/s",
    "kv_passes": "KV-cache streams per decode step (group g = query heads per KV head): 1 for kernels that read "
    "each KV head once for its query group (FlashAttention decode, vLLM PR #3648 "
    "https://github.com/vllm-project/vllm/pull/3648; FlashInfer in SGLang; llama.cpp; gpt-fast's static cache); "
    "g for vLLM's own paged-attention v1/v2 kernel (0.2-0.4.2: a thread block per query head, csrc/attention/"
    "attention_kernels.cu; the g blocks of a KV head run side by side, so g - 1 of the reads are L2 hits, "
    "counted at the weight-stream rate); 3 + 2g for eager transformers: DynamicCache.update torch.cat-s each "
    "layer's cache (read + write) and repeat_kv expands K and V to g copies (read 1, write g) that SDPA reads "
    "(src/transformers/cache_utils.py, models/qwen2/modeling_qwen2.py)",
}


def stream_bandwidth_gb_s(gpu: GPU) -> float:
    """Bandwidth one package can stream: the datasheet figure, capped at ``sms x SM_STREAM_GB_S`` where the
    part lists fewer SMs than its memory system is sized for (``SPEED_SOURCES["sm_stream"]``)."""
    if gpu.sms:
        return min(gpu.bandwidth_gb_s, gpu.sms * gpu.devices_per_package * SM_STREAM_GB_S)
    return gpu.bandwidth_gb_s


def kv_passes(runtime: str, group: int, *, flash_decode: bool = True) -> tuple[float, float]:
    """How a decode step streams the KV cache, for ``group`` query heads per KV head
    (``SPEED_SOURCES["kv_passes"]``): ``(passes from memory, repeats served by L2)``. Grouped-query kernels
    read it once; vLLM's paged attention before FlashAttention decode (``flash_decode=False``) runs a block
    per query head, whose ``group - 1`` repeats of each KV block hit L2; eager transformers copies and
    expands it in memory, ``3 + 2 x group`` passes."""
    g = max(1, group)
    if runtime == "hf":
        return 3.0 + 2.0 * g, 0.0
    if runtime == "vllm" and not flash_decode:
        return 1.0, float(g - 1)
    return 1.0, 0.0


def scale_up_domain(gpu: GPU) -> int:
    """GPUs one NVLink / fabric domain joins: 8 on an HGX or OAM board, 72 for GB200/GB300 (NVL72), 1 for a
    GH200 (superchips reach each other over the network), the bridged group for bridge cards, a torus's
    stated size (TPU, Trainium), 1 without a fast link."""
    text = (gpu.interconnect or "").lower()
    if not gpu.has_fast_interconnect:
        return 1
    if "bridge" in text:
        return 4 if "4-way" in text else 2
    m = re.search(r"up to ([\d,]+) chips", text)
    if m:
        return int(m.group(1).replace(",", ""))
    form = (gpu.form_factor or "").lower()
    if form == "superchip":
        return 72 if gpu.id.startswith(("gb200", "gb300")) else 1
    if form == "chip":
        return 16
    return 8 * gpu.devices_per_package


def link_kind(gpu: GPU, devices: int) -> str:
    """``"local"`` (one device), ``"switch"`` (NVLink/NVSwitch/Infinity Fabric mesh), ``"bridge"``, ``"pcie"``,
    or ``"network"`` when ``devices`` exceed the part's scale-up domain (``scale_up_domain``)."""
    if devices <= 1:
        return "local"
    if not gpu.has_fast_interconnect:
        return "pcie"
    bridged = "bridge" in (gpu.interconnect or "").lower()
    if devices <= scale_up_domain(gpu):
        return "bridge" if bridged else "switch"
    return "pcie" if bridged else "network"  # bridged pairs meet over the host's PCIe; boards over the network


NETWORK_GB_S = 50.0
"""Per-GPU scale-out bandwidth between NVLink domains: one 400 Gb/s NIC per GPU (assumption)."""


def _link_gb_s(gpu: GPU, kind: str) -> float:
    if kind in ("switch", "bridge") and gpu.gpu_link_gb_s:
        return gpu.gpu_link_gb_s / 2  # per direction
    if kind == "network":
        return NETWORK_GB_S
    return _PCIE_GB_S.get(gpu.pcie_gen or 4, 25.0)


def collective_s(gpu: GPU, devices: int, message_bytes: float, *, kind: str | None = None) -> float:
    """Seconds for one all-reduce (or all-to-all) of ``message_bytes`` over ``devices`` GPUs of this kind."""
    if devices <= 1:
        return 0.0
    kind = kind or link_kind(gpu, devices)
    a, b = NVLINK_US if kind in ("switch", "bridge") else PCIE_US
    ring = 2 * (devices - 1) / devices * message_bytes / (_link_gb_s(gpu, kind) * 1e9)
    return (a + b * math.log2(devices)) * 1e-6 + ring


def hop_s(gpu: GPU, message_bytes: float) -> float:
    """One layer-split boundary: latency plus the hidden state over PCIe."""
    return HOP_US * 1e-6 + message_bytes / (_PCIE_GB_S.get(gpu.pcie_gen or 4, 25.0) * 1e9)


@lru_cache(maxsize=256)
def expected_max_load(picks: int, bins: int) -> float:
    """Expected largest count when ``picks`` items land uniformly at random in ``bins`` bins."""
    if bins <= 1 or picks <= 0:
        return float(picks)
    # P(max <= m) by dynamic programming over bins: number of ways to place picks with each bin <= m.
    def p_le(m: int) -> float:
        ways = [1.0] + [0.0] * picks  # multinomial weights / picks!
        for _ in range(bins):
            new = [0.0] * (picks + 1)
            for used, w in enumerate(ways):
                if w:
                    for j in range(0, min(m, picks - used) + 1):
                        new[used + j] += w / math.factorial(j)
            ways = new
        return float(ways[picks] * math.factorial(picks) / bins**picks)

    return sum(1 - p_le(m) for m in range(picks))


def embedding_bytes(arch: object, spec: object) -> float:
    """Input-embedding bytes, which decode does not stream (one row per token), unless tied to the lm_head."""
    groups = getattr(arch, "param_groups", None)
    if groups is None or getattr(arch, "tie_word_embeddings", True):
        return 0.0
    return float(groups()["embedding"]) * float(getattr(spec, "embedding_bits", 16.0)) / 8


def attention_dim(arch: Any) -> int:
    heads = int(getattr(arch, "num_attention_heads", 0) or 0)
    if getattr(arch, "is_mla", False):
        return heads * int(arch.qk_nope_head_dim + arch.qk_rope_head_dim)
    return heads * int(getattr(arch, "head_dim", 0) or 0)


def triton_moe_path(runtime: str, vllm_version: str, sglang_version: str | None, quant: str, experts: int) -> bool:
    """Whether this runtime release runs block-FP8 MoE with more than ``TRITON_MOE_EXPERTS`` routed experts
    through Triton's fused MoE, whose fixed cost per MoE layer the speed model adds (vLLM's V0 engine, SGLang
    0.4.0-0.4.3; ``_overheads.TRITON_MOE_LAYER_S``)."""
    if quant != "fp8" or experts <= TRITON_MOE_EXPERTS:
        return False
    if runtime == "vllm":
        return vllm_profile(vllm_version).triton_moe
    if runtime == "sglang":
        return sglang_triton_moe(sglang_version)
    return False


def triton_moe_of(est: object) -> bool:
    """`triton_moe_path` for an inference estimate: its runtime, releases, weight format and expert count."""
    arch, spec = getattr(est, "architecture", None), getattr(est, "quant_spec", None)
    vllm = str(getattr(est, "vllm_version", DEFAULT_VLLM_VERSION))
    return triton_moe_path(str(getattr(est, "runtime", "default")), vllm, getattr(est, "sglang_version", None),
                           str(getattr(spec, "name", "")), int(getattr(arch, "num_experts", 0) or 0))


def speed_shape(est: Any, spec: Any) -> dict[str, Any]:
    """Architecture and runtime details for the speed model (empty for stand-ins without them)."""
    arch = est.architecture
    layers = int(getattr(arch, "num_hidden_layers", 0) or 0)
    if not layers:
        return {}
    runtime = str(getattr(est, "runtime", "default"))
    marlin, awq, flash, overlap = True, getattr(spec, "name", "") == "int4-awq", True, False
    if runtime == "vllm":
        prof = vllm_profile(str(getattr(est, "vllm_version", DEFAULT_VLLM_VERSION)))
        marlin, flash = prof.marlin and (prof.awq_marlin or not awq), prof.flash_decode
        overlap = prof.async_scheduling
    mla = bool(getattr(arch, "kv_lora_rank", 0))
    group = 1 if mla else int(arch.num_attention_heads) // max(1, int(arch.num_key_value_heads))
    mats = 3 if getattr(arch, "mlp_gated", True) else 2
    moe_layers = int(arch.num_moe_layers) if getattr(arch, "is_moe", False) else 0
    top_k = int(arch.num_experts_per_tok) if moe_layers else 0
    out: dict[str, object] = {"runtime": runtime, "layers": layers, "marlin": marlin, "awq": awq,
                              "fp8": getattr(spec, "name", "") == "fp8",
                              "linears": 4 * layers + mats * (layers - moe_layers + moe_layers * top_k),
                              **dict(zip(("kv_passes", "kv_repeats"), kv_passes(runtime, group, flash_decode=flash),
                                         strict=True)),
                              "hidden": int(arch.hidden_size), "step_overlap": overlap,
                              "layer_split": bool(getattr(est, "layer_split", False))}
    if getattr(arch, "is_moe", False):
        mats = 3 if arch.mlp_gated else 2
        out.update(moe_experts=int(arch.num_experts), moe_top_k=int(arch.num_experts_per_tok),
                   moe_layers=int(arch.num_moe_layers), expert_parallel=bool(getattr(est, "expert_parallel", False)),
                   expert_bytes=mats * arch.hidden_size * arch.moe_intermediate_size * float(spec.bits_per_weight) / 8,
                   triton_moe=triton_moe_path(runtime, str(getattr(est, "vllm_version", DEFAULT_VLLM_VERSION)),
                                              getattr(est, "sglang_version", None), getattr(spec, "name", ""),
                                              int(arch.num_experts)))
    return out

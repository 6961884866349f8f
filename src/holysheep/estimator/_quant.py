"""Weight formats and their effective storage cost per parameter."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .._exceptions import InvalidRequestError
from ._architecture import Architecture

__all__ = [
    "GGUF_QUANTS",
    "QuantSpec",
    "gguf_keeping_mxfp4_experts",
    "list_quants",
    "quant_spec",
    "unquantized_params",
    "weight_bytes",
]


@dataclass(frozen=True)
class QuantSpec:
    """How one weight format stores parameters.

    ``bits_per_weight`` is the effective cost of a quantized projection weight, scales and zero points
    included. ``embedding_bits`` applies to the token/position embeddings and the lm_head (GPTQ/AWQ and
    bitsandbytes keep them at 16 bit; GGUF quantizes them too). ``other_bits`` covers norms, biases and
    MoE routers. ``requires_native`` names a tensor-core precision the GPU must support (``"fp8"``).
    ``experts_only`` formats (MXFP4 as gpt-oss ships it) quantize only the routed experts' matrices;
    every other projection stays at ``dense_bits`` (``other_bits`` when unset).
    """

    name: str
    bits_per_weight: float
    weight_dtype: str
    compute_dtype: str
    requires_native: str | None
    description: str
    source: str
    embedding_bits: float = 16.0
    other_bits: float = 16.0
    aliases: tuple[str, ...] = ()
    experts_only: bool = False
    unquantized: tuple[str, ...] = ()
    """Modules the checkpoint leaves unquantized (its ignore list), counted at ``other_bits``."""
    unquantized_syntax: str = "substring"
    """How ``unquantized`` names modules: ``substring``, ``ct`` (exact or ``re:``) or ``glob``."""
    dense_bits: float | None = None
    """``experts_only`` formats: the bits of the projections outside the routed experts (attention, dense
    MLPs), per tensor as the file stores them; ``None``: ``other_bits``."""

    @property
    def bytes_per_weight(self) -> float:
        return self.bits_per_weight / 8


_G = 128  # GPTQ/AWQ group size
_SPECS: tuple[QuantSpec, ...] = (
    QuantSpec(
        "fp32",
        32.0,
        "fp32",
        "fp32",
        None,
        "IEEE float32 everywhere.",
        "IEEE 754",
        embedding_bits=32.0,
        other_bits=32.0,
        aliases=("float32", "32", "32-true"),
    ),
    QuantSpec(
        "bf16",
        16.0,
        "bf16",
        "bf16",
        None,
        "bfloat16 weights and compute.",
        "Kalamkar et al. 2019, arXiv:1905.12322",
        aliases=("bfloat16",),
    ),
    QuantSpec(
        "fp16",
        16.0,
        "fp16",
        "fp16",
        None,
        "IEEE float16 weights and compute.",
        "IEEE 754",
        aliases=("float16", "half", "16"),
    ),
    QuantSpec(
        "fp8",
        8.0,
        "fp8_e4m3",
        "fp8",
        "fp8",
        "FP8 E4M3 projection weights with per-channel/per-block scales (< 0.01 bit/weight); "
        "embeddings and lm_head stay 16-bit. Needs native FP8 tensor cores (Ada, Hopper, Blackwell).",
        "Micikevicius et al. 2022, arXiv:2209.05433; DeepSeek-V3 report arXiv:2412.19437 (128x128 blocks)",
        aliases=("fp8-e4m3", "float8", "w8a8-fp8"),
    ),
    QuantSpec(
        "mxfp4",
        4 + 8 / 32,
        "mxfp4",
        "bf16",
        None,
        "MXFP4 routed experts as gpt-oss ships them: blocks of 32 FP4 (E2M1) values sharing one 8-bit E8M0 "
        "scale (4.25 bits/weight). Attention, router, embeddings and lm_head stay bf16.",
        "OCP Microscaling Formats (MX) v1.0 spec; gpt-oss model card arXiv:2508.10925 (MoE weights in MXFP4)",
        aliases=("mx-fp4", "gpt-oss-native"),
        experts_only=True,
    ),
    QuantSpec(
        "gguf-mxfp4",
        17 * 8 / 32,
        "mxfp4",
        "fp16",
        None,
        "GGUF file type MXFP4 MoE as llama.cpp's converter writes gpt-oss, per tensor: routed experts in ggml MXFP4 "
        "(17 bytes / 32 weights), attention, token embeddings and output in Q8_0 (8.5 bits), norms, biases, "
        "router and attention sinks in F32. gpt-oss-20b: 11.27 GiB.",
        "ggml-org/llama.cpp ggml-common.h (block_mxfp4, block_q8_0), convert_hf_to_gguf.py (GptOssModel); "
        "ggml-org/gpt-oss-20b-GGUF load log: 289 f32, 98 q8_0, 72 mxfp4 tensors, file size 11.27 GiB",
        embedding_bits=34 * 8 / 32,
        other_bits=32.0,
        aliases=("mxfp4-moe", "mxfp4_moe", "gguf-mxfp4-moe"),
        experts_only=True,
        dense_bits=34 * 8 / 32,
    ),
    QuantSpec(
        "int8-w8a8",
        8.0 + 16 / 4096,
        "int8",
        "int8",
        "int8",
        "INT8 W8A8 (compressed-tensors / llm-compressor): int8 weights with one 16-bit scale per output "
        "channel and int8 activations; INT8 tensor cores. Embeddings and lm_head stay 16-bit.",
        "vLLM docs, INT8 W8A8 (https://docs.vllm.ai/en/latest/features/quantization/int8.html); "
        "compressed-tensors config_groups (weights num_bits 8, type int)",
        aliases=("w8a8", "w8a8-int8", "compressed-tensors-int8"),
    ),
    QuantSpec(
        "int4-w4a16",
        4 + 16 / _G,
        "int4",
        "bf16",
        None,
        "INT4 W4A16 (compressed-tensors pack-quantized): int4 weights packed in int32, one 16-bit scale per "
        "group of 128, symmetric (no zero points); 16-bit activations (Marlin kernels in vLLM).",
        "vLLM docs, INT4 W4A16 (https://docs.vllm.ai/en/latest/features/quantization/int4.html); "
        "compressed-tensors pack-quantized format",
        aliases=("compressed-tensors-w4a16",),
    ),
    QuantSpec(
        "nvfp4",
        4 + 8 / 16,
        "nvfp4",
        "fp4",
        "fp4",
        "NVFP4: FP4 (E2M1) weights with one FP8 (E4M3) scale per 16 values and a per-tensor FP32 scale "
        "(4.5 bits); FP4 tensor cores (Blackwell). Embeddings and lm_head stay 16-bit.",
        "NVIDIA TensorRT Model Optimizer docs (NVFP4); compressed-tensors nvfp4-pack-quantized",
        aliases=("fp4", "modelopt-nvfp4"),
    ),
    QuantSpec(
        "int8",
        8.0,
        "int8",
        "fp16",
        None,
        "bitsandbytes LLM.int8(): int8 weights plus one fp32 scale per row; lm_head and embeddings skipped (16-bit).",
        "Dettmers et al. 2022, arXiv:2208.07339",
        aliases=("bnb-int8", "llm.int8", "w8a16", "8bit"),
    ),
    QuantSpec(
        "int4-gptq",
        4 + 16 / _G + 4 / _G + 32 / 4096,
        "int4",
        "fp16",
        None,
        "GPTQ 4-bit, group 128: int4 weights + fp16 scale and 4-bit zero per group + int32 g_idx "
        "per input row (32/out bits, shown for out=4096). Embeddings and lm_head stay 16-bit.",
        "Frantar et al. 2022, arXiv:2210.17323; AutoGPTQ checkpoint layout",
        aliases=("gptq", "gptq-int4", "w4a16-gptq"),
    ),
    QuantSpec(
        "int4-awq",
        4 + 16 / _G + 4 / _G,
        "int4",
        "fp16",
        None,
        "AWQ 4-bit GEMM, group 128: int4 weights + fp16 scale and 4-bit zero per group. "
        "Embeddings and lm_head stay 16-bit.",
        "Lin et al. 2023, arXiv:2306.00978; AutoAWQ layout",
        aliases=("awq", "int4", "awq-int4", "w4a16", "4bit"),
    ),
    QuantSpec(
        "nf4",
        4 + 8 / 64 + 32 / (64 * 256),
        "nf4",
        "bf16",
        None,
        "bitsandbytes NF4 with double quantization: 4-bit codes, 8-bit absmax per 64 weights, "
        "fp32 constant per 256 blocks. lm_head and embeddings stay 16-bit.",
        "Dettmers et al. 2023 (QLoRA), arXiv:2305.14314 §3",
        aliases=("bnb-nf4", "qlora", "nf4-dq"),
    ),
    QuantSpec(
        "bnb-4bit",
        4 + 32 / 64,
        "fp4",
        "bf16",
        None,
        "bitsandbytes load_in_4bit with its defaults: FP4 codes, one fp32 absmax per 64 weights, no double "
        "quantization (4.5 bits). lm_head and embeddings stay 16-bit.",
        "bitsandbytes BitsAndBytesConfig defaults (bnb_4bit_quant_type='fp4', bnb_4bit_use_double_quant=False); "
        "Dettmers et al. 2023, arXiv:2305.14314",
        aliases=("bnb-fp4", "fp4-bnb", "load_in_4bit", "bnb4"),
    ),
    QuantSpec(
        "mlx-4bit",
        4 + 2 * 16 / 64,
        "int4",
        "bf16",
        None,
        "MLX affine 4-bit (mlx_lm.convert -q defaults): groups of 64 weights with a 16-bit scale and a 16-bit "
        "bias (4.5 bits); token embeddings and lm_head quantized too. Norms stay 16-bit.",
        "ml-explore/mlx mlx.core.quantize (group_size 64, bits 4: scales and biases per group); "
        "ml-explore/mlx-lm convert.py q_group_size=64, q_bits=4; mlx.nn.QuantizedEmbedding",
        embedding_bits=4 + 2 * 16 / 64,
        aliases=("mlx-q4", "mlx4", "mlx-int4"),
    ),
    QuantSpec(
        "mlx-8bit",
        8 + 2 * 16 / 64,
        "int8",
        "bf16",
        None,
        "MLX affine 8-bit: groups of 64 weights with a 16-bit scale and a 16-bit bias (8.5 bits); token "
        "embeddings and lm_head quantized too. Norms stay 16-bit.",
        "ml-explore/mlx mlx.core.quantize (group_size 64, bits 8); ml-explore/mlx-lm convert.py --q-bits 8",
        embedding_bits=8 + 2 * 16 / 64,
        aliases=("mlx-q8", "mlx8", "mlx-int8"),
    ),
    QuantSpec(
        "q8_0",
        34 * 8 / 32,
        "int8",
        "fp16",
        None,
        "GGUF Q8_0: blocks of 32 int8 + one fp16 scale (34 bytes / 32 weights), embeddings included.",
        "ggml-org/llama.cpp ggml-common.h (block_q8_0)",
        embedding_bits=8.5,
        aliases=("gguf-q8_0", "q8-0"),
    ),
    QuantSpec(
        "q6_k",
        210 * 8 / 256,
        "int6",
        "fp16",
        None,
        "GGUF Q6_K: 210 bytes per 256-weight super-block, embeddings included.",
        "ggml-org/llama.cpp ggml-common.h (block_q6_K)",
        embedding_bits=6.5625,
        aliases=("gguf-q6_k", "q6-k"),
    ),
    QuantSpec(
        "q4_k_m",
        4.8944,
        "int4",
        "fp16",
        None,
        "GGUF Q4_K_M as shipped: Q4_K (144 B / 256) with Q6_K on half of attn_v/ffn_down; "
        "4.8944 effective bits measured over whole files, embeddings included.",
        "ggml-org/llama.cpp tools/quantize/README.md; ggml-common.h (block_q4_K)",
        embedding_bits=4.8944,
        aliases=("gguf-q4_k_m", "q4-k-m"),
    ),
    QuantSpec(
        "q4_0",
        18 * 8 / 32,
        "int4",
        "fp16",
        None,
        "GGUF Q4_0: blocks of 32 4-bit weights + fp16 scale (18 bytes / 32), embeddings included.",
        "ggml-org/llama.cpp ggml-common.h (block_q4_0)",
        embedding_bits=4.5,
        aliases=("gguf-q4_0", "q4-0"),
    ),
)
_BY_NAME: dict[str, QuantSpec] = {}
for _s in _SPECS:
    for _n in (_s.name, *_s.aliases):
        _BY_NAME[_n.lower()] = _s


def list_quants() -> list[str]:
    """Canonical names of the supported weight formats."""
    return [s.name for s in _SPECS]


def quant_spec(name: str | QuantSpec) -> QuantSpec:
    """Look up a weight format by name or alias (``"awq"`` -> ``int4-awq``); raises InvalidRequestError."""
    if isinstance(name, QuantSpec):
        return name
    if not isinstance(name, str):
        raise InvalidRequestError(f"quant must be a string, got {type(name).__name__}", field="quant")
    spec = _BY_NAME.get(name.strip().lower().replace("_", "_"))
    if spec is None:
        raise InvalidRequestError(
            f"unknown quant {name!r}; use one of {', '.join(list_quants())}",
            field="quant",
            reason="unknown quant",
        )
    return spec


GGUF_QUANTS = frozenset({"q8_0", "q6_k", "q4_k_m", "q4_0"})
"""The llama.cpp quantization types (one nominal type per file)."""


def gguf_keeping_mxfp4_experts(spec: QuantSpec) -> QuantSpec:
    """``spec`` (a GGUF type) applied to a checkpoint whose routed experts ship in MXFP4 (gpt-oss): llama.cpp keeps
    the experts' MXFP4 blocks whatever the file's type and applies the type to the other matrices, with norms,
    biases and the router in F32. unsloth/gpt-oss-20b-GGUF's Q4_K_M logs 72 mxfp4 tensors and 10.81 GiB; every
    gpt-oss GGUF keeps the 72 expert tensors in MXFP4 (NousResearch/hermes-agent issue #116681, read from the
    headers of the ggml-org, unsloth, bartowski and lmstudio-community files)."""
    mx = quant_spec("gguf-mxfp4")
    return replace(spec, name=f"{spec.name}+mxfp4", bits_per_weight=mx.bits_per_weight, experts_only=True,
                   dense_bits=spec.bits_per_weight, other_bits=mx.other_bits, aliases=(),
                   description=f"{spec.description} Routed experts kept in MXFP4 as the checkpoint ships them.",
                   source=f"{spec.source}; {mx.source}")


def unquantized_params(arch: Architecture, spec: QuantSpec) -> int:
    """Parameters of quantizable matrices that the checkpoint's ignore list keeps at ``other_bits``."""
    if not spec.unquantized:
        return 0
    from ._checkpoint import matches, module_paths

    kept = 0.0
    for m in arch.weight_matrices():
        if not m.quantizable or (spec.experts_only and not m.name.startswith("experts.")):
            continue
        paths = module_paths(m, arch)
        hit = sum(matches(p, spec.unquantized, spec.unquantized_syntax) for p in paths)
        kept += m.params * hit / len(paths)
    return round(kept)


def weight_bytes(arch: Architecture, spec: QuantSpec) -> int:
    """Bytes needed to store every weight of ``arch`` in format ``spec`` (whole model, all GPUs)."""
    g = arch.param_groups()
    kept = unquantized_params(arch, spec)
    quantized = (arch.routed_expert_params() if spec.experts_only else g["linear"]) - kept
    dense = spec.other_bits if spec.dense_bits is None else spec.dense_bits  # experts_only: outside the experts
    bits = (
        quantized * spec.bits_per_weight
        + (g["linear"] - quantized - kept) * dense
        + kept * spec.other_bits
        + (g["embedding"] + g["lm_head"]) * spec.embedding_bits
        + g["other"] * spec.other_bits
    )
    return round(bits / 8)

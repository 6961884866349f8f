"""The checks of ``estimate_inference_memory``'s arguments, in one place: counts, the runtime and the weight
format it loads, the KV dtype, the utilization, the flags and the runtime releases. Each failure is an
``InvalidRequestError`` naming its field."""

from __future__ import annotations

from .._exceptions import InvalidRequestError
from ._architecture import Architecture, dtype_bytes
from ._common import check_choice, check_int
from ._mlx import mlx_release
from ._prealloc import check_prealloc_quant
from ._quant import GGUF_QUANTS, QuantSpec, gguf_keeping_mxfp4_experts, quant_spec
from ._runtimes import RUNTIMES, full_prompt_logits, sglang_triton_moe
from ._vllm import vllm_profile

__all__ = ["KV_DTYPES", "check_inference_request"]

KV_DTYPES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8-e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp32": "fp32",
    "float32": "fp32",
    "auto": "auto",
}


def check_inference_request(
    arch: Architecture,
    name: str,
    spec: QuantSpec,
    notes: list[str],
    *,
    ships: str | None = None,
    context: int,
    batch: int,
    tensor_parallel: int,
    runtime: str,
    kv_dtype: str | None,
    gpu_memory_utilization: float | None,
    gpu_memory_gb: float | None,
    prefill_chunk: int | None,
    vllm_version: str,
    flash_attention: bool,
    max_num_batched_tokens: int | None,
    expert_parallel: bool,
    transformers_version: str | None,
    sglang_version: str | None,
    prompt_tokens: int | None,
    mlx_lm_version: str | None,
) -> tuple[QuantSpec, list[str], str, str | None, float | None]:
    """Check the request; return the weight format the runtime loads, the notes, the canonical runtime, the KV
    dtype (``None``: the compute dtype) and the GPU memory as a float. ``ships``: the checkpoint's own format
    (a GGUF type passed for an MXFP4 checkpoint keeps its MXFP4 experts)."""
    check_int(context, "context")
    check_int(batch, "batch")
    check_int(tensor_parallel, "tensor_parallel", maximum=1024)
    if prefill_chunk is not None:
        check_int(prefill_chunk, "prefill_chunk")
    if max_num_batched_tokens is not None:
        check_int(max_num_batched_tokens, "max_num_batched_tokens")
    if prompt_tokens is not None and check_int(prompt_tokens, "prompt_tokens") > context:
        raise InvalidRequestError(f"prompt_tokens ({prompt_tokens:,}) cannot exceed context ({context:,}): the "
                                  "context is the prompt plus the generated tokens", field="prompt_tokens")
    rt = check_choice(runtime, "runtime", RUNTIMES)
    if spec.name in GGUF_QUANTS and ships == "mxfp4":
        spec = gguf_keeping_mxfp4_experts(spec)
        notes = [*notes, f"GGUF keeps the checkpoint's MXFP4 experts: {spec.name.split('+')[0]} applies to the other "
                 f"matrices (quant {spec.name})"]
    if rt == "llama.cpp" and spec.name == "mxfp4":
        spec = quant_spec("gguf-mxfp4")
        notes = [*notes, "llama.cpp loads the GGUF its converter writes: MXFP4 experts, Q8_0 attention, embeddings "
                 "and output, F32 norms, biases and router (quant gguf-mxfp4)"]
    check_prealloc_quant(rt, spec)
    kv = None if kv_dtype is None else check_choice(kv_dtype, "kv_dtype", KV_DTYPES)
    if kv == "auto":
        kv = None
    if kv is not None:
        dtype_bytes(kv)
    if gpu_memory_utilization is not None and (
        isinstance(gpu_memory_utilization, bool) or not 0 < float(gpu_memory_utilization) <= 1
    ):
        raise InvalidRequestError(
            f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}",
            field="gpu_memory_utilization",
            reason="out of range",
        )
    if not isinstance(flash_attention, bool):
        raise InvalidRequestError("flash_attention must be True or False", field="flash_attention")
    if not isinstance(expert_parallel, bool):
        raise InvalidRequestError("expert_parallel must be True or False", field="expert_parallel")
    if expert_parallel and not arch.is_moe:
        raise InvalidRequestError(f"expert_parallel=True needs a mixture-of-experts model; {name} is dense",
                                  field="expert_parallel", reason="dense model")
    if gpu_memory_gb is not None:
        gpu_memory_gb = gpu_memory_gb_checked = float(gpu_memory_gb)
        if gpu_memory_gb_checked <= 0:
            raise InvalidRequestError(f"gpu_memory_gb must be > 0, got {gpu_memory_gb}", field="gpu_memory_gb")
    vllm_profile(vllm_version)
    if transformers_version is not None:
        if rt != "hf":
            raise InvalidRequestError(f"transformers_version applies to runtime='hf', not {rt!r}",
                                      field="transformers_version")
        full_prompt_logits(transformers_version)  # a clear error for a malformed version
    if mlx_lm_version is not None:
        if rt != "mlx":
            raise InvalidRequestError(f"mlx_lm_version applies to runtime='mlx', not {rt!r}", field="mlx_lm_version")
        mlx_release(mlx_lm_version)  # a clear error for a malformed version
    if sglang_version is not None:
        if rt != "sglang":
            raise InvalidRequestError(f"sglang_version applies to runtime='sglang', not {rt!r}",
                                      field="sglang_version")
        sglang_triton_moe(sglang_version)  # a clear error for a malformed version
    return spec, notes, rt, kv, gpu_memory_gb

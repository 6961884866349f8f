"""Inference memory: weights + KV cache + prefill working set + runtime overhead, per GPU."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import InvalidRequestError
from ._architecture import Architecture, dtype_bytes
from ._catalog import ModelLike, resolve_model
from ._common import GB, RUNTIME_OVERHEAD_BYTES, MemoryTotals, check_choice, check_int, gpu_memory_gb
from ._quant import QuantSpec, quant_spec, weight_bytes
from ._render import render_html, render_text
from ._vllm import VLLMCapacity, vllm_capacity, vllm_profile

__all__ = ["InferenceEstimate", "estimate_inference_memory", "prefill_activation_bytes"]

DEFAULT_PREFILL_CHUNK = 8192
_KV_DTYPES = {
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


def prefill_activation_bytes(
    arch: Architecture, tokens: int, tensor_parallel: int = 1, logits_rows: int = 1, act_bytes: float = 2.0
) -> int:
    """Peak transient memory of one forward pass over ``tokens`` tokens (no autograd), per GPU.

    Per token: the residual stream and its normed copy (2h) plus the larger of the attention
    working set (q, k, v, attention output) and the MLP working set (gate, up and their product:
    3 x intermediate; for MoE the routed + shared experts a token visits), sharded by tensor
    parallelism; plus fp32 logits for ``logits_rows`` positions.
    """
    h, a, tp = arch.hidden_size, arch.num_attention_heads, tensor_parallel
    if arch.is_mla:
        attn = a * (2 * (arch.qk_nope_head_dim + arch.qk_rope_head_dim) + 2 * arch.v_head_dim)
    else:
        attn = (2 * a + 2 * arch.num_key_value_heads) * arch.head_dim
    widths = [attn / tp]
    mult = 3 if arch.mlp_gated else 2
    if arch.num_dense_layers:
        widths.append(mult * arch.intermediate_size / tp)
    if arch.is_moe:
        widths.append(mult * arch.moe_intermediate_size * (arch.num_experts_per_tok + arch.num_shared_experts) / tp)
    per_token = act_bytes * (2 * h + max(widths))
    return int(tokens * per_token + logits_rows * arch.vocab_size * 4)


@dataclass(frozen=True, eq=False)
class InferenceEstimate(MemoryTotals):
    """Memory needed to serve a model; ``breakdown`` is GB per GPU. Build with estimate_inference_memory."""

    model_name: str
    architecture: Architecture
    quant: str
    quant_spec: QuantSpec
    context: int
    batch: int
    kv_dtype: str
    tensor_parallel: int
    runtime: str
    breakdown: dict[str, float]
    weights_bytes_total: int
    kv_cache_bytes_per_token: int
    prefill_chunk: int
    assumptions: list[str]
    warnings: list[str]
    vllm: VLLMCapacity | None = None
    gpu_memory_utilization: float = 0.9
    gpu_memory_gb: float | None = None
    _rebuild: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def gpu_count(self) -> int:
        return self.tensor_parallel

    def with_tensor_parallel(self, n: int) -> InferenceEstimate:
        """The same request sharded over ``n`` GPUs."""
        return _build(**{**self._rebuild, "tensor_parallel": check_int(n, "tensor_parallel")})

    def fits(self, gpu: Any, count: int = 1) -> bool:
        """Whether ``count`` GPUs (tensor parallel) of this kind hold the request.

        ``gpu`` is a hardware-table name, an object with ``.memory_gb`` or a size in GB. In vLLM mode
        the KV pool vLLM would allocate must hold ``batch`` sequences of ``context`` tokens.
        """
        est = self if check_int(count, "count") == self.tensor_parallel else self.with_tensor_parallel(count)
        mem, _label = gpu_memory_gb(gpu)
        if est.runtime == "vllm":
            return _build(**{**est._rebuild, "gpu_memory_gb": mem}).vllm.fits  # type: ignore[union-attr]
        return est.per_gpu_gb <= mem

    def __str__(self) -> str:
        title = (
            f"{self.model_name} inference, {self.quant} weights, {self.kv_dtype} KV, "
            f"context {self.context:,} x batch {self.batch}, TP {self.tensor_parallel}"
        )
        extra = []
        if self.vllm is not None:
            v = self.vllm
            extra.append(
                f"vLLM ({v.profile}): {v.num_gpu_blocks:,} blocks of {v.block_size} = "
                f"{v.kv_cache_tokens:,} tokens ({v.kv_cache_gb:.2f} GB) per GPU at "
                f"util {v.gpu_memory_utilization:g} of {v.gpu_memory_gb:g} GB; "
                f"max concurrency {v.max_concurrency:.2f}x"
            )
        return render_text(title, self.breakdown, self.tensor_parallel, self.assumptions, self.warnings, extra)

    def _repr_html_(self) -> str:
        title = f"{self.model_name}: {self.quant}, ctx {self.context:,} x {self.batch}, TP {self.tensor_parallel}"
        return render_html(title, self.breakdown, self.tensor_parallel, self.assumptions, self.warnings)


def _build(
    *,
    arch: Architecture,
    name: str,
    base_notes: list[str],
    approximate: bool,
    spec: QuantSpec,
    context: int,
    batch: int,
    kv_dtype: str | None,
    tensor_parallel: int,
    runtime: str,
    gpu_memory_utilization: float,
    gpu_memory_gb: float | None,
    prefill_chunk: int | None,
    vllm_version: str,
    emit_warning: bool = True,
) -> InferenceEstimate:
    rebuild = dict(
        emit_warning=False,
        arch=arch,
        name=name,
        base_notes=base_notes,
        approximate=approximate,
        spec=spec,
        context=context,
        batch=batch,
        kv_dtype=kv_dtype,
        tensor_parallel=tensor_parallel,
        runtime=runtime,
        gpu_memory_utilization=gpu_memory_utilization,
        gpu_memory_gb=gpu_memory_gb,
        prefill_chunk=prefill_chunk,
        vllm_version=vllm_version,
    )
    notes, warns = list(base_notes), []
    tp = tensor_parallel
    kv = kv_dtype or ("fp32" if spec.compute_dtype == "fp32" else "fp16" if spec.compute_dtype == "fp16" else "bf16")
    if kv_dtype is None:
        notes.append(f"KV cache in {kv} (the compute dtype of {spec.name}); pass kv_dtype='fp8' to halve it")
    w_total = weight_bytes(arch, spec)
    w_gpu = math.ceil(w_total / tp)
    kv_gpu = arch.kv_cache_bytes(context, batch, kv, tp)
    if arch.is_mla and tp > 1:
        notes.append("MLA latent cache is replicated on every tensor-parallel rank")
    elif not arch.is_mla and tp > arch.num_key_value_heads:
        notes.append(f"TP {tp} > {arch.num_key_value_heads} KV heads: KV heads are replicated")
    if arch.num_attention_heads % tp:
        warns.append(
            f"{arch.num_attention_heads} attention heads do not divide by tensor_parallel={tp}; "
            "vLLM and most runtimes refuse this"
        )
    if arch.windowed_layers():
        notes.append(
            f"{len(arch.windowed_layers())} of {arch.num_hidden_layers} layers keep at most "
            f"{arch.sliding_window} tokens (sliding window)"
        )
    if context > arch.max_position_embeddings:
        warns.append(
            f"context {context:,} exceeds the model's max_position_embeddings {arch.max_position_embeddings:,}"
        )
    if spec.requires_native:
        notes.append(f"{spec.name} needs native {spec.requires_native} tensor cores (Ada/Hopper or newer)")
    vcap = None
    if runtime == "vllm":
        prof = vllm_profile(vllm_version)
        tokens = prof.max_num_batched_tokens
        act = prefill_activation_bytes(arch, tokens, tp, logits_rows=2 * prof.max_num_seqs)
        overhead = (prof.non_torch_bytes_tp if tp > 1 else prof.non_torch_bytes) + prof.cuda_graph_bytes
        notes.append(
            f"vLLM {prof.name}: profile pass of {tokens} tokens, {prof.block_size}-token blocks; {prof.description}"
        )
        if gpu_memory_gb is not None:
            vcap = vllm_capacity(
                arch,
                weights_per_gpu=w_gpu,
                activation_peak=act,
                kv_dtype=kv,
                tensor_parallel=tp,
                context=context,
                batch=batch,
                gpu_memory_gb=gpu_memory_gb,
                gpu_memory_utilization=gpu_memory_utilization,
                profile=prof,
            )
            if not vcap.fits:
                warns.append(
                    f"vLLM pool of {vcap.num_gpu_blocks:,} blocks cannot hold {batch} x {context:,} "
                    f"tokens ({vcap.requested_blocks:,} blocks)"
                )
        else:
            notes.append("pass gpu_memory_gb (or call fits(gpu)) to get vLLM's KV block count")
        chunk = tokens
    else:
        chunk = min(context * batch, prefill_chunk or context * batch)
        act = prefill_activation_bytes(arch, chunk, tp, logits_rows=batch)
        overhead = RUNTIME_OVERHEAD_BYTES
        notes.append(
            f"prefill processed in chunks of {chunk:,} tokens; runtime overhead = CUDA context "
            f"512 MiB + cuBLAS workspace 32 MiB per GPU"
        )
    if approximate and emit_warning:
        warnings.warn(
            f"{name}: architecture assumed from a bare parameter count; the memory figure is "
            "approximate. Pass a catalog name or config.json for an exact one.",
            UserWarning,
            stacklevel=3,
        )
    if approximate:
        warns.append("architecture assumed from a bare parameter count: approximate")
    breakdown = {
        "weights": w_gpu / GB,
        "kv_cache": kv_gpu / GB,
        "activations": act / GB,
        "overhead": overhead / GB,
    }
    return InferenceEstimate(
        model_name=name,
        architecture=arch,
        quant=spec.name,
        quant_spec=spec,
        context=context,
        batch=batch,
        kv_dtype=kv,
        tensor_parallel=tp,
        runtime=runtime,
        breakdown=breakdown,
        weights_bytes_total=w_total,
        kv_cache_bytes_per_token=arch.kv_cache_bytes_per_token(kv),
        prefill_chunk=chunk,
        assumptions=notes,
        warnings=warns,
        vllm=vcap,
        gpu_memory_utilization=gpu_memory_utilization,
        gpu_memory_gb=gpu_memory_gb,
        _rebuild=rebuild,
    )


def estimate_inference_memory(
    model: ModelLike,
    quant: str | QuantSpec = "bf16",
    context: int = 2048,
    batch: int = 1,
    kv_dtype: str | None = None,
    tensor_parallel: int = 1,
    *,
    runtime: str = "default",
    gpu_memory_utilization: float = 0.9,
    gpu_memory_gb: float | None = None,
    prefill_chunk: int | None = DEFAULT_PREFILL_CHUNK,
    vllm_version: str = "v1",
) -> InferenceEstimate:
    """Estimate GPU memory to serve ``model`` at ``context`` tokens x ``batch`` sequences.

    ``model`` is a catalog name, an `Architecture`, a ``config.json`` path or dict, or a size in
    billions (approximate; warns). ``quant`` names a weight format (see `quant_spec`);
    ``kv_dtype`` defaults to the compute dtype. ``runtime="vllm"`` models vLLM's preallocated KV pool:
    with ``gpu_memory_gb`` (total memory CUDA reports, in GB) the result's ``vllm`` field gives the
    block and token counts at ``gpu_memory_utilization``. ``prefill_chunk`` bounds the tokens of one
    prefill pass (``None``: the whole batch at once, as eager Hugging Face generation does).
    """
    arch, name, notes, approximate = resolve_model(model)
    spec = quant_spec(quant)
    check_int(context, "context")
    check_int(batch, "batch")
    check_int(tensor_parallel, "tensor_parallel", maximum=1024)
    if prefill_chunk is not None:
        check_int(prefill_chunk, "prefill_chunk")
    rt = check_choice(runtime, "runtime", {"default": "default", "vllm": "vllm", "hf": "default"})
    kv = None if kv_dtype is None else check_choice(kv_dtype, "kv_dtype", _KV_DTYPES)
    if kv == "auto":
        kv = None
    if kv is not None:
        dtype_bytes(kv)
    if isinstance(gpu_memory_utilization, bool) or not 0 < float(gpu_memory_utilization) <= 1:
        raise InvalidRequestError(
            f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}",
            field="gpu_memory_utilization",
            reason="out of range",
        )
    if gpu_memory_gb is not None:
        gpu_memory_gb = gpu_memory_gb_checked = float(gpu_memory_gb)
        if gpu_memory_gb_checked <= 0:
            raise InvalidRequestError(f"gpu_memory_gb must be > 0, got {gpu_memory_gb}", field="gpu_memory_gb")
    vllm_profile(vllm_version)
    return _build(
        arch=arch,
        name=name,
        base_notes=notes,
        approximate=approximate,
        spec=spec,
        context=context,
        batch=batch,
        kv_dtype=kv,
        tensor_parallel=tensor_parallel,
        runtime=rt,
        gpu_memory_utilization=float(gpu_memory_utilization),
        gpu_memory_gb=gpu_memory_gb,
        prefill_chunk=prefill_chunk,
        vllm_version=vllm_version,
    )

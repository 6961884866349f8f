"""Inference memory: weights + KV cache + prefill working set + runtime overhead, per GPU."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import InvalidRequestError
from ._architecture import Architecture
from ._catalog import ModelLike, resolve_model, shipped_quant
from ._common import (
    GB,
    RESERVE_FRACTION,
    RESERVE_MIN_GB,
    MemoryCheck,
    MemoryTotals,
    check_int,
    runtime_memory_gb,
    warn_once,
)
from ._inference_checks import check_inference_request
from ._parallel import parallel_notes
from ._prealloc import PREALLOC_RUNTIMES, prealloc_check, prealloc_memory
from ._quant import GGUF_QUANTS, QuantSpec, quant_spec, unquantized_params, weight_bytes
from ._render import render_html, render_text
from ._runtimes import (
    full_prompt_logits,
    prefill_activation_bytes,
    runtime_memory,
    uses_layer_split,
)
from ._vllm import DEFAULT_VLLM_VERSION, VLLMCapacity, vllm_profile

__all__ = ["InferenceEstimate", "estimate_inference_memory", "prefill_activation_bytes"]

DEFAULT_PREFILL_CHUNK = 8192


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
    gpu_memory_utilization: float | None = None
    gpu_memory_gb: float | None = None
    flash_attention: bool = True
    static_fraction: float | None = None
    quant_as_shipped: bool = False
    expert_parallel: bool = False
    """MoE experts placed whole on GPUs (vLLM's ``--enable-expert-parallel``) instead of tensor-parallel slices."""
    _rebuild: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def quant_label(self) -> str:
        """The weight format, with "(as shipped)" when it was the checkpoint's own (no ``quant`` passed)."""
        return f"{self.quant} (as shipped)" if self.quant_as_shipped else self.quant

    @property
    def vllm_version(self) -> str:
        """The vLLM profile this estimate was sized with (``"v1"`` unless given)."""
        return str(self._rebuild.get("vllm_version", DEFAULT_VLLM_VERSION))

    @property
    def sglang_version(self) -> str | None:
        """The SGLang release this estimate's speed is modelled for (``None``: current)."""
        v = self._rebuild.get("sglang_version")
        return None if v is None else str(v)

    @property
    def gpu_count(self) -> int:
        return self.tensor_parallel

    @property
    def layer_split(self) -> bool:
        """True when GPUs hold whole layers (llama.cpp, transformers) rather than tensor-parallel shards."""
        return uses_layer_split(self.runtime)

    def with_tensor_parallel(self, n: int) -> InferenceEstimate:
        """The same request over ``n`` GPUs (tensor parallel, or a layer split for llama.cpp and hf)."""
        return _build(**{**self._rebuild, "tensor_parallel": check_int(n, "tensor_parallel")})

    def with_options(self, **changes: object) -> InferenceEstimate:
        """The same request with ``context``, ``batch``, ``tensor_parallel`` or ``gpu_memory_utilization``
        changed (used by the solvers and the picker's fit hints)."""
        allowed = {"context", "batch", "tensor_parallel", "gpu_memory_utilization"}
        bad = set(changes) - allowed
        if bad:
            raise InvalidRequestError(f"with_options takes {', '.join(sorted(allowed))}, not {', '.join(sorted(bad))}",
                                      field=sorted(bad)[0])
        for k, v in changes.items():
            if k == "gpu_memory_utilization":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                    raise InvalidRequestError(f"gpu_memory_utilization must be in (0, 1], got {v!r}", field=k)
            else:
                check_int(v, k)
        return _build(**{**self._rebuild, **changes})

    def memory_check(self, gpu: object, count: int | None = None) -> MemoryCheck:
        """Apply this runtime's memory rule, once, to ``count`` GPUs of this kind (default: this estimate's).

        vLLM: weights + profile peak + buffers + the KV blocks of ``batch x context`` within total x
        ``gpu_memory_utilization``. SGLang: weights + KV + CUDA context within total x ``mem_fraction_static``
        and the prefill chunk in the rest. transformers, llama.cpp, MLX and the default runtime: the
        per-GPU sum within the GPU's memory less an allocator reserve of 1 GB or 5 %, whichever is larger
        (caching-allocator fragmentation, NCCL and CUDA-graph buffers; capacities are device bytes).
        """
        n = self.tensor_parallel if count is None else check_int(count, "count")
        mem, label, warned = runtime_memory_gb(gpu, self.runtime)
        est = _build(**{**self._rebuild, "tensor_parallel": n, "gpu_memory_gb": mem, "gpu_name": label})
        need = est.per_gpu_gb
        if est.runtime == "vllm" and est.vllm is not None:
            v = est.vllm
            return MemoryCheck(v.fits, need, v.budget_gb, mem, f"vLLM: total x gpu_memory_utilization "
                               f"{v.gpu_memory_utilization:g}", warned)
        if est.runtime in PREALLOC_RUNTIMES and est.static_fraction is not None:
            return prealloc_check(est.runtime, est.static_fraction, est.breakdown, mem, warned)
        if est.runtime == "sglang" and est.static_fraction is not None:
            frac = est.static_fraction
            static = est.breakdown["weights"] + est.breakdown["kv_cache"] + est.breakdown["overhead"]
            dyn_ok = est.breakdown["activations"] <= mem * (1 - frac)
            return MemoryCheck(static <= mem * frac and dyn_ok, static, mem * frac, mem,
                               f"SGLang: total x mem_fraction_static {frac:g}"
                               + ("" if dyn_ok else "; the prefill chunk does not fit in the rest"), warned)
        usable = mem - max(RESERVE_MIN_GB, RESERVE_FRACTION * mem)
        return MemoryCheck(need <= usable, need, usable, mem, f"{est.runtime}: the GPU's memory less a "
                           f"{mem - usable:.2f} GB allocator reserve (max of 1 GB and 5 %; overheads counted)")

    def fits(self, gpu: object, count: int | None = None) -> bool:
        """Whether ``count`` GPUs (default: this estimate's) of this kind hold the request under its runtime.

        ``gpu`` is a hardware-table name, an object with ``.memory_gb`` or a size in GB. Same answer as
        ``memory_check(gpu, count).fits``, which ``pick_hardware`` and ``holysheep plan`` use. Under vLLM
        and SGLang a table GPU without CUDA's total (``cuda_total_gib``) is judged on the driver's figure
        and a ``UserWarning`` says so, once per run (``memory_check(...).warnings`` carries the same text).
        """
        check = self.memory_check(gpu, count)
        for text in check.warnings:
            warn_once(text, stacklevel=2)
        return check.fits

    def __str__(self) -> str:
        title = (
            f"{self.model_name} inference ({self.runtime}), {self.quant_label} weights, {self.kv_dtype} KV, "
            f"context {self.context:,} x batch {self.batch}, {'GPUs' if self.layer_split else 'TP'} "
            f"{self.tensor_parallel}"
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
    gpu_memory_utilization: float | None,
    gpu_memory_gb: float | None,
    prefill_chunk: int | None,
    vllm_version: str,
    transformers_version: str | None = None,
    flash_attention: bool = True,
    max_num_batched_tokens: int | None = None,
    gpu_name: str | None = None,
    sglang_version: str | None = None,
    emit_warning: bool = True,
    as_shipped: bool = False,
    base_warnings: tuple[str, ...] = (),
    expert_parallel: bool = False,
    prompt_tokens: int | None = None,
    mlx_lm_version: str | None = None,
) -> InferenceEstimate:
    rebuild = {k: v for k, v in locals().items() if k != "emit_warning"}
    rebuild["emit_warning"] = False
    notes, warns = list(base_notes), [*arch.assumptions, *base_warnings]
    tp = tensor_parallel
    kv = kv_dtype or ("fp32" if spec.compute_dtype == "fp32" else "fp16" if spec.compute_dtype == "fp16" else "bf16")
    if kv_dtype is None:
        notes.append(f"KV cache in {kv} (the compute dtype of {spec.name}); pass kv_dtype='fp8' to halve it")
    w_total = weight_bytes(arch, spec)
    split = uses_layer_split(runtime)
    more_notes, more_warns = parallel_notes(arch, tp, split=split, expert_parallel=expert_parallel)
    notes += more_notes
    warns += more_warns
    if arch.windowed_layers():
        notes.append(
            f"{len(arch.windowed_layers())} of {arch.num_hidden_layers} layers keep at most "
            f"{arch.sliding_window} tokens (sliding window)"
        )
    if context > arch.max_position_embeddings:
        warns.append(
            f"context {context:,} exceeds the model's max_position_embeddings {arch.max_position_embeddings:,}"
        )
    if as_shipped:
        notes.append(f"weights in {spec.name}, the format the checkpoint ships in; pass quant= to plan another")
    prompt = context if prompt_tokens is None else min(prompt_tokens, context)
    if runtime == "hf" and full_prompt_logits(transformers_version):
        notes.append(f"transformers {transformers_version} (before 4.45) builds logits for the whole prompt: "
                     f"{prompt * batch:,} x {arch.vocab_size:,} x 6 bytes (16-bit + fp32 copy) counted"
                     + ("" if prompt_tokens is not None else "; pass prompt_tokens= when part of the context "
                        "is generated"))
    kept = unquantized_params(arch, spec)
    if kept:
        notes.append(f"{kept / 1e9:.2f}B parameters the checkpoint leaves unquantized ({', '.join(spec.unquantized)})"
                     f" counted at {spec.other_bits:g} bits")
    if spec.requires_native:
        notes.append(f"{spec.name} needs native {spec.requires_native} tensor cores (Ada/Hopper or newer)")
    rm = prealloc_memory(
        arch, spec, runtime=runtime, context=context, batch=batch, kv=kv, tensor_parallel=tp,
        fraction=gpu_memory_utilization, max_num_tokens=max_num_batched_tokens,
    ) if runtime in PREALLOC_RUNTIMES else runtime_memory(
        arch, spec, runtime=runtime, context=context, batch=batch, kv=kv, tensor_parallel=tp,
        prefill_chunk=prefill_chunk, flash_attention=flash_attention, max_num_batched_tokens=max_num_batched_tokens,
        gpu_memory_gb=gpu_memory_gb, gpu_name=gpu_name, gpu_memory_utilization=gpu_memory_utilization,
        vllm_version=vllm_version, transformers_version=transformers_version, prompt=prompt,
        mlx_lm_version=mlx_lm_version,
    )
    notes += rm.notes
    warns += rm.warnings
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
        "weights": rm.weights / GB,
        "kv_cache": rm.kv_cache / GB,
        "activations": rm.activations / GB,
        "overhead": rm.overhead / GB,
    }
    util = rm.vllm.gpu_memory_utilization if rm.vllm is not None else (
        rm.static_fraction if rm.static_fraction is not None else gpu_memory_utilization)
    if runtime == "vllm" and util is None:
        util = vllm_profile(vllm_version).gpu_memory_utilization
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
        prefill_chunk=rm.chunk,
        assumptions=notes,
        warnings=warns,
        vllm=rm.vllm,
        gpu_memory_utilization=util,
        gpu_memory_gb=gpu_memory_gb,
        flash_attention=flash_attention,
        static_fraction=rm.static_fraction,
        quant_as_shipped=as_shipped,
        expert_parallel=expert_parallel,
        _rebuild=rebuild,
    )


def estimate_inference_memory(
    model: ModelLike,
    quant: str | QuantSpec | None = None,
    context: int = 2048,
    batch: int = 1,
    kv_dtype: str | None = None,
    tensor_parallel: int = 1,
    *,
    runtime: str = "default",
    gpu_memory_utilization: float | None = None,
    gpu_memory_gb: float | None = None,
    prefill_chunk: int | None = DEFAULT_PREFILL_CHUNK,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    flash_attention: bool = True,
    max_num_batched_tokens: int | None = None,
    expert_parallel: bool = False,
    transformers_version: str | None = None,
    sglang_version: str | None = None,
    prompt_tokens: int | None = None,
    mlx_lm_version: str | None = None,
) -> InferenceEstimate:
    """Estimate GPU memory to serve ``model`` at ``context`` tokens x ``batch`` sequences.

    ``model`` is a catalog name, an `Architecture`, a ``config.json`` path or dict, or a size in
    billions (approximate; warns). ``quant`` names a weight format (see `quant_spec`); by default a
    catalog model is planned in the format its checkpoint ships in (``CatalogEntry.quant``: fp8 for
    DeepSeek-V3/R1/V3.2, Kimi-K2 and MiniMax-M2, mxfp4 for gpt-oss; ``quant_label`` then reads
    "fp8 (as shipped)"), anything else in bf16. ``kv_dtype`` defaults to the compute dtype.

    ``runtime`` picks the memory rules of one serving stack (docs/estimator.md lists them with sources):
    ``"default"`` (generic: chunked prefill of ``prefill_chunk`` tokens, CUDA context counted),
    ``"vllm"`` (preallocated KV pool at ``gpu_memory_utilization``, default 0.9, after a profile pass of
    ``max_num_batched_tokens``; with ``gpu_memory_gb`` the ``vllm`` field gives block counts),
    ``"sglang"`` (``mem_fraction_static``, passed as ``gpu_memory_utilization``), ``"hf"`` (transformers:
    whole prompt at once, uncompressed MLA cache, layer split over GPUs), ``"llama.cpp"`` (layer split,
    compute buffer, no cap), ``"mlx"`` (Apple unified memory), ``"tensorrt-llm"`` (also NIM) or ``"lmdeploy"``
    (TurboMind: a KV pool of ``gpu_memory_utilization``, default 0.9 / 0.8, of the memory left after weights).
    ``flash_attention=False`` counts the
    eager attention scores (hf, default) or llama.cpp's KQ buffer. ``tensor_parallel`` is the GPU count.
    ``expert_parallel=True`` (vLLM's ``--enable-expert-parallel``) places a mixture-of-experts model's
    experts whole on the GPUs instead of slicing each over them (same memory; the speed model and the plan
    use it). ``transformers_version`` (runtime ``"hf"``): before 4.45 the whole prompt's logits are built
    in fp32, which is counted. ``sglang_version`` (runtime ``"sglang"``, e.g. ``"0.4.3.post2"``): releases
    0.4.0-0.4.3 run DeepSeek-class MoE through Triton's fused MoE with block-FP8 weights, whose fixed cost
    per MoE layer the speed model adds (docs/hardware.md, "Runtime costs"); memory does not change.
    ``prompt_tokens`` (at most ``context``; default all of it): the prompt's part of the context, which
    transformers runs as one forward pass (its working set and, before 4.45, its logits); the rest is generated.
    ``mlx_lm_version`` (runtime ``"mlx"``, e.g. ``"0.26.4"``): releases before 0.27 build the logits of the
    prompt's whole last step, which is counted.
    """
    arch, name, notes, approximate = resolve_model(model)
    shipped, unread = shipped_quant(model) if quant is None else (None, None)
    spec = quant_spec(quant if quant is not None else shipped or "bf16")
    ships = shipped if quant is None else shipped_quant(model)[0] if spec.name in GGUF_QUANTS else None
    spec, notes, rt, kv, gpu_memory_gb = check_inference_request(
        arch, name, spec, notes, ships=getattr(ships, "name", ships), context=context, batch=batch,
        tensor_parallel=tensor_parallel, runtime=runtime,
        kv_dtype=kv_dtype, gpu_memory_utilization=gpu_memory_utilization, gpu_memory_gb=gpu_memory_gb,
        prefill_chunk=prefill_chunk, vllm_version=vllm_version, flash_attention=flash_attention,
        max_num_batched_tokens=max_num_batched_tokens, expert_parallel=expert_parallel,
        transformers_version=transformers_version, sglang_version=sglang_version, prompt_tokens=prompt_tokens,
        mlx_lm_version=mlx_lm_version,
    )
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
        gpu_memory_utilization=None if gpu_memory_utilization is None else float(gpu_memory_utilization),
        gpu_memory_gb=gpu_memory_gb,
        prefill_chunk=prefill_chunk,
        vllm_version=vllm_version,
        transformers_version=transformers_version,
        flash_attention=flash_attention,
        max_num_batched_tokens=max_num_batched_tokens,
        sglang_version=sglang_version,
        as_shipped=shipped is not None and spec.name != "bf16",
        base_warnings=() if unread is None else (unread,),
        expert_parallel=expert_parallel,
        prompt_tokens=prompt_tokens,
        mlx_lm_version=mlx_lm_version,
    )

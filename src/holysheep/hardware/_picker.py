"""``pick_hardware``: which GPUs, how many, how fast and at what cost, with reasons for the rest.

Policy (also in docs/hardware.md):

* Counts are powers of two up to ``max_gpus``. For inference the number of devices is the tensor-
  parallel degree: it must divide the attention heads, and divide the KV heads or be a multiple of them
  (KV heads are then replicated, as vLLM and SGLang do, and their cache counted on every GPU;
  ``tensor_parallel_problem``). For training it is the data-parallel degree (ZeRO shards over it); heads
  do not constrain it.
* A count fits when the estimate's own runtime rule says so, applied once (``memory_check``: vLLM's
  ``gpu_memory_utilization``, SGLang's ``mem_fraction_static``, all of the memory for transformers,
  llama.cpp, MLX and the default runtime, whose overheads are already counted). ``fits()``, this
  picker and ``holysheep plan`` therefore give the same answer. ``memory_fraction`` adds an optional
  extra cap; estimates without a runtime rule (duck-typed stand-ins) use 0.9 of the memory.
* llama.cpp and transformers split layers over GPUs, so head counts do not limit their GPU count;
  MLX runs on one Apple-silicon machine.
* A quant whose spec needs a native path (``requires_native`` = "fp8", "fp4" or "int4") is *rejected*
  on parts without it: fp8 checkpoints are not served on A100/A10/V100/T4/MI250X through a slow
  emulation path. Weight-only INT4 (AWQ/GPTQ) needs no native path (it dequantises to FP16), except
  that AWQ kernels need NVIDIA compute capability 7.5+, so AWQ is rejected on V100.
* Training is offered only where its stack runs (``_training_stack``): CUDA/ROCm GPUs for DeepSpeed/FSDP,
  TPUs, Gaudi and Trainium with a note naming their stack, Apple silicon for MLX LoRA on one machine,
  systems-on-chip on one device; inference-only chips are rejected. A training fit that fails says which
  switch would fit (checkpointing, ZeRO stage, offload, a shorter sequence).
* For each GPU the picker keeps the best count under the objective; GPUs with no workable count are
  in ``.rejected`` with their reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._exceptions import InvalidRequestError
from ..accelerators import GPU, gpu, gpus
from ..estimator._parallel import tensor_parallel_problem
from ._coverage import speed_caveats
from ._hints import fit_hints
from ._intervals import decode_interval, interval_key
from ._option_notes import gpu_notes, moe_placement_note, precision_notes
from ._result import HardwareOption, PickResult
from ._roofline import (
    DEFAULT_EFFICIENCIES,
    Efficiencies,
    decode_tokens_per_s,
    prefill_tokens_per_s,
    train_tokens_per_s,
)
from ._speed import attention_dim, embedding_bytes, speed_shape
from ._training_stack import training_support

__all__ = ["OBJECTIVES", "HardwareOption", "PickResult", "pick_hardware"]

OBJECTIVES = ("cost", "cost_per_token", "latency", "throughput")
"""``cost``: the lowest hourly price that meets the request (the cheapest GPU); ``cost_per_token``: the lowest
$/M tokens at the requested batch; ``latency``: batch-1 decode speed; ``throughput``: aggregate decode speed."""
RUNTIME_VENDOR = {"mlx": ("apple", "MLX", "Apple silicon"), "tensorrt-llm": ("nvidia", "TensorRT-LLM", "NVIDIA GPUs"),
                  "lmdeploy": ("nvidia", "LMDeploy TurboMind", "NVIDIA GPUs")}
"""Runtimes that run on one vendor's hardware: (vendor, name, what it runs on)."""
NO_CUDA_TOTAL_NOTE = "sized from the driver's memory figure: CUDA's total is not in the table"
"""Option note under vLLM/SGLang for a GPU row without ``cuda_total_gib`` (the budget may be ~1 GiB high)."""


def _is_training(est: object) -> bool:
    return hasattr(est, "with_num_gpus") and not hasattr(est, "with_tensor_parallel")


def _memory(g: GPU, sized: Any, devices: int,
            memory_fraction: float | None) -> tuple[bool, float, float, str, tuple[str, ...]]:
    """(fits, need GB, limit GB, rule, warnings) for one device of ``g`` under the estimate's runtime rule."""
    per_device = g.memory_per_device_gb
    check = getattr(sized, "memory_check", None)
    warned: tuple[str, ...] = ()
    if check is not None:
        from types import SimpleNamespace

        c = check(SimpleNamespace(memory_gb=per_device, name=g.name, cuda_total_gib=g.cuda_total_gib), devices)
        fits, need, limit, rule = bool(c.fits), float(c.need_gb), float(c.limit_gb), str(c.rule)
        warned = tuple(getattr(c, "warnings", ()))
        sized_from = float(getattr(c, "gpu_memory_gb", per_device))
        if abs(sized_from - per_device) > 1e-6:
            rule += f" of CUDA's total {sized_from:.2f} GB"
    else:
        frac = 0.9 if memory_fraction is None else memory_fraction
        need, limit, rule = float(sized.per_gpu_gb), per_device * frac, f"{frac:g} of the memory"
        return need <= limit, need, limit, rule, ()
    if memory_fraction is not None and per_device * memory_fraction < limit:
        limit = per_device * memory_fraction
        fits = fits and need <= limit
        rule = f"memory_fraction {memory_fraction:g}"
    return fits, need, limit, rule, warned


def _evaluate(g: GPU, count: int, est: Any, *, training: bool, memory_fraction: float | None,
              budget: float | None, eff: Efficiencies, notes0: list[str]) -> HardwareOption:
    devices = count * g.devices_per_package
    base: dict[str, Any] = {"gpu": g, "count": count, "usable_gb_per_gpu": g.memory_per_device_gb,
                            "tensor_parallel": devices}
    arch = est.architecture
    params = float(arch.num_params)
    active = float(getattr(arch, "num_active_params", None) or params)
    runtime = str(getattr(est, "runtime", "default"))
    if not training:
        heads, kv = int(arch.num_attention_heads), int(arch.num_key_value_heads)
        if runtime == "mlx" and devices > 1:
            return HardwareOption(**base, fits=False, per_gpu_gb=None, headroom_gb=None,
                                  reason="MLX serves from one machine", reason_code="runtime_limit")
        problem = None if getattr(est, "layer_split", False) else tensor_parallel_problem(
            heads, kv, devices, mla=bool(getattr(arch, "is_mla", False)))
        if problem:
            return HardwareOption(**base, fits=False, per_gpu_gb=None, headroom_gb=None,
                                  reason=f"heads do not shard over {devices} GPUs: {problem}",
                                  reason_code="heads_not_divisible")
        sized = est.with_tensor_parallel(devices) if devices != est.tensor_parallel else est
    else:
        sized = est.with_num_gpus(devices)
    fits, per_gpu, usable, rule, warned = _memory(g, sized, devices, memory_fraction)
    base.update(per_gpu_gb=per_gpu, headroom_gb=usable - per_gpu, fits=fits, usable_gb_per_gpu=usable)
    if not fits:
        reason = (f"does not fit: needs {per_gpu:.1f} GB per GPU at {count}x, "
                  f"{usable:.1f} GB usable ({rule}, {g.memory_per_device_gb:g} GB GPU)")
        if training:
            hint = _training_hint(sized, g, devices)
            return HardwareOption(**base, reason=reason + (f"; {hint}" if hint else ""), reason_code="does_not_fit")
        hints = fit_hints(sized, g.memory_per_device_gb, g.name, devices, cuda_total_gib=g.cuda_total_gib)
        tail = f"; fits with {' or '.join(hints)}" if hints else ""
        return HardwareOption(**base, reason=reason + tail, reason_code="does_not_fit")
    perf: dict[str, float | None] = {}
    if training:
        k = 6.0 if str(getattr(est, "method", "full")) == "full" else 4.0
        perf["train_tokens_per_s"] = tok_s = train_tokens_per_s(g, count, active_params=active,
                                                                flops_per_param=k, eff=eff)
    else:
        kw = {**decode_inputs(est), "eff": eff}
        compute = str(kw["precision"])
        perf["decode_tokens_per_s"] = tok_s = decode_tokens_per_s(g, count, batch=int(est.batch), **kw)
        perf["decode_tokens_per_s_batch1"] = decode_tokens_per_s(g, count, batch=1, **kw)
        base["decode_interval"] = decode_interval(tok_s, interval_key(runtime, g, int(est.batch)))
        perf["prefill_tokens_per_s"] = prefill_tokens_per_s(
            g, count, active_params=active, precision=compute, eff=eff, prompt_tokens=int(est.context),
            layers=kw.get("layers", 0), hidden=kw.get("hidden", 0), layer_split=kw.get("layer_split", False),
            attention_dim=attention_dim(arch))
    price = None if g.price_per_hour is None else g.price_per_hour * count
    cost_m = price / (tok_s * 3600) * 1e6 if price is not None and tok_s else None
    base["caveats"] = speed_caveats(g, devices, est, training=training)
    base.update(perf, price_per_hour=price, cost_per_million_tokens=cost_m,
                notes=tuple(notes0 + gpu_notes(g, devices, training) + [NO_CUDA_TOTAL_NOTE] * bool(warned)
                            + ([] if training else [n for n in [moe_placement_note(est, devices)] if n])))
    if budget is not None and price is None:
        return HardwareOption(**base, reason="no price known, so the budget cannot be checked",
                              reason_code="no_price")
    if budget is not None and price is not None and price > budget:
        return HardwareOption(**base, reason=f"over budget: ${price:,.2f}/h > ${budget:,.2f}/h",
                              reason_code="over_budget")
    return HardwareOption(**base)


def decode_inputs(est: Any) -> dict[str, Any]:
    """The keyword arguments ``decode_tokens_per_s`` takes for an inference estimate (all but ``eff``)."""
    arch, spec = est.architecture, est.quant_spec
    params = float(arch.num_params)
    compute = str(getattr(spec, "compute_dtype", "bf16") or "bf16")
    return {
        "weight_bytes": float(est.weights_bytes_total) - embedding_bytes(arch, spec),
        "kv_bytes_per_token": float(est.kv_cache_bytes_per_token),
        "context": int(est.context),
        "params": params,
        "active_params": float(getattr(arch, "num_active_params", None) or params),
        "precision": compute,
        "weight_only_int4": float(spec.bits_per_weight) < 8 and compute in ("bf16", "fp16"),
        **speed_shape(est, spec),
    }


def _training_hint(sized: object, g: GPU, devices: int) -> str | None:
    """The switch that would make a training run fit (``TrainingEstimate.fit_hint``), if the estimate has one."""
    hint = getattr(sized, "fit_hint", None)
    if hint is None:
        return None
    from types import SimpleNamespace

    result = hint(SimpleNamespace(memory_gb=g.memory_per_device_gb, name=g.name), devices)
    return None if result is None else str(result)


def _score(o: HardwareOption, objective: str) -> tuple[float, float]:
    inf = float("inf")
    speed = o.train_tokens_per_s if o.decode_tokens_per_s is None else (
        o.decode_tokens_per_s_batch1 if objective == "latency" else o.decode_tokens_per_s)
    if objective == "cost":  # the cheapest hardware that meets the request; faster breaks a tie
        return (o.price_per_hour if o.price_per_hour is not None else inf, -(speed or 0.0))
    if objective == "cost_per_token":
        return (o.cost_per_million_tokens if o.cost_per_million_tokens is not None else inf, o.count)
    return (-(speed or 0.0), o.cost_per_million_tokens if o.cost_per_million_tokens is not None else inf)


def _latency_count(ok: list[HardwareOption], min_speedup: float) -> HardwareOption:
    """The smallest count after which doubling stops paying ``min_speedup`` in batch-1 speed."""
    def speed(o: HardwareOption) -> float:
        return float(o.decode_tokens_per_s_batch1 or o.train_tokens_per_s or 0.0)

    best = ok[0]
    for o in ok[1:]:
        doublings = math.log2(o.count / best.count)
        if speed(o) >= speed(best) * min_speedup**doublings:
            best = o
    return best


def _pick_rejection(tried: list[HardwareOption]) -> HardwareOption:
    for code in ("over_budget", "no_price"):
        hit = [o for o in tried if o.reason_code == code]
        if hit:
            return hit[0]
    sized = [o for o in tried if o.reason_code == "does_not_fit"]
    if sized:
        last = sized[-1]
        heads = [o for o in tried if o.reason_code == "heads_not_divisible" and o.count > last.count]
        if heads:
            return HardwareOption(**{**{k: getattr(last, k) for k in last.__dataclass_fields__},
                                     "reason": f"{last.reason}; larger counts: {heads[0].reason}"})
        return last
    return tried[-1]


def _more_gpus_hint(rej: HardwareOption, g: GPU, est: object, counts: list[int], *, training: bool, eff: Efficiencies,
                    memory_fraction: float | None) -> HardwareOption:
    """A memory rejection at a fixed count says so when 2, 4 or 8 times the GPUs would hold the model."""
    if len(counts) != 1 or rej.reason_code != "does_not_fit" or not rej.reason:
        return rej
    for n in (counts[0] * 2, counts[0] * 4, counts[0] * 8):
        o = _evaluate(g, n, est, training=training, memory_fraction=memory_fraction, budget=None, eff=eff, notes0=[])
        if o.fits:
            joiner = " or " if "; fits with " in rej.reason else "; fits with "
            return replace(rej, reason=f"{rej.reason}{joiner}{n} GPUs")
    return rej


def pick_hardware(
    model_or_estimate: object,
    *,
    quant: str | None = None,
    context: int = 2048,
    batch: int = 1,
    kv_dtype: str | None = None,
    max_gpus: int = 8,
    objective: str = "cost",
    budget_per_hour: float | None = None,
    gpus: Sequence[str | GPU] | None = None,
    memory_fraction: float | None = None,
    efficiencies: Efficiencies | None = None,
    runtime: str = "default",
    gpu_memory_utilization: float | None = None,
    gpu_count: int | None = None,
    min_speedup_per_doubling: float = 1.4,
    expert_parallel: bool = False,
) -> PickResult:
    """Rank GPU types (at power-of-two counts up to ``max_gpus``) for serving or training a model.

    ``model_or_estimate`` is a model name (an inference estimate is built with ``quant``, ``context``,
    ``batch`` and ``kv_dtype``; ``quant`` defaults to the format the checkpoint ships in), an
    ``InferenceEstimate`` or a ``TrainingEstimate``. ``objective``:
    ``"cost"`` (the lowest hourly price that meets the request: the cheapest GPU), ``"cost_per_token"``
    ($/M tokens at the requested batch), ``"latency"`` (decode tok/s at batch 1) or ``"throughput"``
    (aggregate tok/s). ``budget_per_hour`` drops options above it. ``gpus`` restricts the table (names/aliases).
    ``runtime`` (and ``gpu_memory_utilization``, ``expert_parallel``) set the serving stack when a name is
    given; an estimate brings its own. MoE experts are tensor-parallel unless ``expert_parallel`` (each
    option's notes say which was assumed). Memory is judged by the estimate's ``memory_check`` (its
    runtime's rule, once), so an option here fits exactly when ``estimate.fits(gpu, count)`` does;
    ``memory_fraction`` is an extra cap.
    ``gpu_count`` tries only that many GPUs (any integer) instead of the powers of two up to ``max_gpus``.
    Under ``"latency"`` a GPU type only moves to twice the GPUs when that buys at least
    ``min_speedup_per_doubling`` (1.4: 70 % scaling) more batch-1 speed, so small models are not spread
    over eight GPUs for a few per cent.
    Returns a ``PickResult`` (best first) whose ``.rejected`` lists unusable GPUs with reasons.
    """
    if objective not in OBJECTIVES:
        raise InvalidRequestError(f"objective={objective!r} must be one of {', '.join(OBJECTIVES)}",
                                  field="objective", reason="unknown objective")
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or max_gpus < 1:
        raise InvalidRequestError(f"max_gpus must be a positive integer, got {max_gpus!r}", field="max_gpus")
    if memory_fraction is not None and not 0 < memory_fraction <= 1:
        raise InvalidRequestError(f"memory_fraction must be in (0, 1], got {memory_fraction!r}",
                                  field="memory_fraction")
    if min_speedup_per_doubling < 1:
        raise InvalidRequestError(f"min_speedup_per_doubling must be >= 1, got {min_speedup_per_doubling!r}",
                                  field="min_speedup_per_doubling")
    if budget_per_hour is not None and budget_per_hour <= 0:
        raise InvalidRequestError(f"budget_per_hour must be positive, got {budget_per_hour!r}",
                                  field="budget_per_hour")
    if isinstance(model_or_estimate, str):
        from ..estimator import estimate_inference_memory

        est: Any = estimate_inference_memory(model_or_estimate, quant=quant, context=context, batch=batch,
                                             kv_dtype=kv_dtype, tensor_parallel=1, runtime=runtime,
                                             gpu_memory_utilization=gpu_memory_utilization,
                                             expert_parallel=expert_parallel)
    else:
        est = model_or_estimate
    training = _is_training(est)
    eff = efficiencies or DEFAULT_EFFICIENCIES
    table = [gpu(x) for x in gpus] if gpus is not None else list(_all_gpus())
    counts = [1 << i for i in range(max_gpus.bit_length()) if 1 << i <= max_gpus]
    if gpu_count is not None:
        if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 1:
            raise InvalidRequestError(f"gpu_count must be a positive integer, got {gpu_count!r}", field="gpu_count")
        counts = [gpu_count]
    options, rejected = [], []
    for g in table:
        most: int | None = None
        if training:
            reason, most, notes0 = training_support(g, est)
            code = "no_training_stack"
        else:
            reason, notes0 = precision_notes(g, est.quant_spec)
            code = "no_native_precision"
        mine = [c for c in counts if most is None or c * g.devices_per_package <= most]
        if reason is None and not mine:
            reason, code = f"{g.name} trains on {most} device(s) only ({'; '.join(notes0)})", "runtime_limit"
        only = None if training else RUNTIME_VENDOR.get(str(getattr(est, "runtime", "")))
        if reason is None and only is not None and g.vendor != only[0]:
            reason, code = f"{only[1]} runs on {only[2]} only, not on {g.name}", "runtime_limit"
        if reason is not None:
            usable = g.memory_per_device_gb * (memory_fraction or 1.0)
            rejected.append(HardwareOption(g, 1, False, None, usable, None, g.devices_per_package,
                                           reason=reason, reason_code=code))
            continue
        tried = [_evaluate(g, c, est, training=training, memory_fraction=memory_fraction,
                           budget=budget_per_hour, eff=eff, notes0=notes0) for c in mine]
        ok = [o for o in tried if o.reason is None]
        if ok and objective == "latency":
            options.append(_latency_count(ok, min_speedup_per_doubling))
        elif ok:
            options.append(min(ok, key=lambda o: _score(o, objective)))
        else:
            rejected.append(_more_gpus_hint(_pick_rejection(tried), g, est, counts, training=training, eff=eff,
                                            memory_fraction=memory_fraction))
    options.sort(key=lambda o: (_score(o, objective), o.gpu.name))
    return PickResult(options, rejected, objective, est)


def _all_gpus() -> list[GPU]:
    return list(gpus())

"""What ``holysheep gpus`` and ``holysheep plan`` print. Pure functions: plain keyword args in, text out.

The argparse wiring lives in ``holysheep.cli``; these functions need no key and no network.
"""

from __future__ import annotations

import difflib
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import InvalidRequestError
from ..accelerators import gpu as lookup_gpu
from ..accelerators import gpus
from ..accelerators._text import format_table
from ..estimator._vllm import DEFAULT_VLLM_VERSION
from ._picker import pick_hardware
from ._result import pick_text

__all__ = ["DEFAULT_TOKENS_PER_DAY", "parse_gpus", "parse_tokens", "render_gpus_table", "run_plan"]

DEFAULT_TOKENS_PER_DAY = 10_000_000
"""Daily volume used for the API comparison when ``api_model`` is given without ``tokens_per_day``."""

_SORTS = ("bf16", "bw", "mem", "price")


def render_gpus_table(sort: str = "bf16", as_json: bool = False) -> str:
    """``holysheep gpus [--sort bf16|bw|mem|price] [--json]``: the table as text or as a JSON array."""
    if sort not in _SORTS:
        raise InvalidRequestError(f"--sort must be one of {', '.join(_SORTS)}, got {sort!r}", field="sort")
    rows = gpus(sort=sort)
    if as_json:
        return json.dumps([g.to_dict() for g in rows], indent=2)
    return str(rows)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*[bB]?\s*$")


def _suggest(name: str, choices: Mapping[str, str]) -> list[str]:
    """Up to four distinct close matches: ``choices`` maps every spelling (aliases too) to what to show."""
    by_lower = {k.lower(): v for k, v in choices.items()}
    shown: list[str] = []
    for m in difflib.get_close_matches(name.lower(), list(by_lower), n=12, cutoff=0.5):
        if by_lower[m] not in shown:
            shown.append(by_lower[m])
    return shown[:4]


def _model_arg(model: str) -> str | float:
    """A catalog name, a config path, or a bare size in billions (``70b``, ``70``, ``7.5B``)."""
    size = _SIZE.match(model)
    if size:
        return float(size.group(1))
    if model.endswith(".json") or Path(model).is_dir():
        return model
    from ..estimator import catalog_entry, list_models

    try:
        catalog_entry(model)
    except InvalidRequestError:
        hint = _suggest(model, {n: n for n in list_models()})
        did = f"; did you mean {', '.join(hint)}?" if hint else "."
        raise InvalidRequestError(
            f"unknown model {model!r}{did} Run `holysheep models --catalog` for the catalog, or pass a "
            "config.json path or a bare size in billions such as 70b",
            field="model", reason="unknown model") from None
    return model


_TOKENS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
_COUNTED = re.compile(r"^\s*(\d+)\s*[xX\u00d7]\s*(\S.*)$")


def parse_tokens(text: str | int, field: str = "context") -> int:
    """A token count: ``32768``, ``32k`` (x 1,024, as model cards count: 32k = 32,768) or ``1m`` (x 1,048,576)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _TOKENS.match(str(text))
    if not m:
        raise InvalidRequestError(f"--{field} must be a token count such as 8192, 32k or 1m, got {text!r}",
                                  field=field, reason="not a token count")
    value = float(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20}[m.group(2).lower()]
    if value != int(value) or value < 1:
        raise InvalidRequestError(f"--{field} must be a whole number of tokens >= 1, got {text!r}", field=field)
    return int(value)


def _is_gpu(name: str) -> bool:
    try:
        lookup_gpu(name)
    except InvalidRequestError:
        return False
    return True


def parse_gpus(values: Sequence[str] | None, count: int | None = None) -> tuple[list[str] | None, int | None]:
    """``--gpus`` and ``--count`` as (GPU names or None, GPU count or None).

    Each ``--gpus`` value is one comma-separated list (``H100,L40S``), so the option never takes the model
    that follows it; a value that is itself a GPU name containing a comma is kept whole.

    A value that names a GPU is that GPU, also when it is a number (``4090`` is the RTX 4090, ``5090``
    the RTX 5090); ``4x4090`` is four of them. A bare number that names no GPU (``--gpus 8``) still means
    a count, as before; ``--count N`` says so explicitly. Two different counts are an error.
    """
    names: list[str] = []
    counts = {count} if count is not None else set()
    split = [part.strip() for value in values or () for part in ([value] if _is_gpu(value) else value.split(","))]
    if any(not part for part in split):
        raise InvalidRequestError(f"--gpus has an empty name in {','.join(values or ())!r}: separate GPUs with "
                                  "single commas, e.g. --gpus H100,L40S", field="gpus", reason="empty gpu name")
    for raw in split:
        m = _COUNTED.match(raw)
        if m and not _is_gpu(raw):
            counts.add(int(m.group(1)))
            names.append(m.group(2).strip())
        elif raw.strip().isdigit() and not _is_gpu(raw):
            counts.add(int(raw))
        else:
            names.append(raw)
    if len(counts) > 1:
        raise InvalidRequestError(f"conflicting GPU counts {sorted(counts)}: give one count (--count N or NxGPU)",
                                  field="gpus", reason="conflicting counts")
    got = counts.pop() if counts else None
    if got is not None and got < 1:
        raise InvalidRequestError(f"the GPU count must be >= 1, got {got}", field="count")
    return (names or None), got


def _gpus_arg(names: Sequence[str] | None) -> list[str] | None:
    if names is None:
        return None
    for name in names:
        try:
            lookup_gpu(name)
        except InvalidRequestError:
            hint = _suggest(name, {x: g.name for g in gpus() for x in (g.id, g.name, *g.aliases)})
            did = f"; did you mean {', '.join(hint)}?" if hint else "."
            raise InvalidRequestError(f"unknown GPU {name!r}{did} Run `holysheep gpus` for the table",
                                      field="gpus", reason="unknown gpu") from None
    return list(names)


def _memory_section(est: Any, training: bool) -> tuple[list[str], dict[str, object]]:
    breakdown = {str(k): float(v) for k, v in dict(getattr(est, "breakdown", {}) or {}).items()}
    per_gpu = float(est.per_gpu_gb)
    tp = int(getattr(est, "tensor_parallel", 1) or 1)
    if training:
        where = f"{getattr(est, 'num_gpus', 1)} GPU(s), ZeRO-{getattr(est, 'zero_stage', 0)}"
        lines = [f"Memory per GPU ({where}): {per_gpu:.2f} GB (total {float(est.total_gb):.2f} GB)"]
    elif tp > 1:
        lines = [f"Memory per GPU (tensor parallel {tp}): {per_gpu:.2f} GB (total {float(est.total_gb):.2f} GB)"]
    else:  # the options below split it over their GPU count: their GB/GPU column is the per-GPU figure
        lines = [f"Memory on one device (no tensor parallelism): {per_gpu:.2f} GB; each option below shows "
                 "its own GB/GPU"]
    if breakdown:
        column = "GB/GPU" if training or tp > 1 else "GB"
        lines.append(format_table(("component", column), [[k, f"{v:.2f}"] for k, v in breakdown.items()]))
    data: dict[str, object] = {"per_gpu_gb": per_gpu, "total_gb": float(est.total_gb), "breakdown_gb": breakdown}
    if not training:
        data["tensor_parallel"] = tp  # per_gpu_gb is at this degree; each option has its own per_gpu_gb
    return lines, data


def run_plan(
    model: str,
    *,
    quant: str | None = None,
    context: int = 2048,
    batch: int = 1,
    kv_dtype: str | None = None,
    train: bool | str = False,
    method: str = "full",
    zero_stage: int = 0,
    train_options: Mapping[str, object] | None = None,
    max_gpus: int = 8,
    objective: str = "cost",
    budget_per_hour: float | None = None,
    gpus: Sequence[str] | None = None,
    api_model: str | None = None,
    tokens_per_day: float | None = None,
    utilization: float = 0.5,
    input_fraction: float | None = None,
    top: int = 5,
    runtime: str = "default",
    gpu_memory_utilization: float | None = None,
    flash_attention: bool = True,
    gpu_count: int | None = None,
    expert_parallel: bool = False,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    transformers_version: str | None = None,
    sglang_version: str | None = None,
    prompt_tokens: int | None = None,
    mlx_lm_version: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """``holysheep plan MODEL ...``: memory breakdown, top options, rejections and API comparison.

    Inference by default, under ``runtime`` ("default", "vllm", "sglang", "hf", "llama.cpp", "mlx",
    "tensorrt-llm", "lmdeploy";
    ``gpu_memory_utilization`` is vLLM's fraction or SGLang's ``mem_fraction_static``).
    ``train=True`` (or "full", "lora", "qlora", which sets ``method``) plans a fine-tune (``zero_stage``;
    ``context`` and ``batch`` become ``seq_len`` and ``micro_batch``; other ``estimate_training_memory``
    keywords such as ``optimizer``, ``precision``, ``gradient_checkpointing``, ``offload_optimizer``,
    ``offload_params`` or ``lora_rank`` go in ``train_options``; ``quant`` is ignored).
    ``gpu_count`` fixes the number of GPUs (the data-parallel degree when training). ``expert_parallel``
    places an MoE model's experts whole on the GPUs (vLLM's ``--enable-expert-parallel``). ``vllm_version``,
    ``transformers_version``, ``sglang_version`` and ``mlx_lm_version`` are `estimate_inference_memory`'s (the
    release whose rules apply). ``prompt_tokens``: the prompt's part of ``context`` (inference; default all of it).
    ``api_model`` adds a break-even against that API model at ``tokens_per_day`` (default 1e7).
    Returns ``(text, json_dict)``.
    """
    if top < 1:
        raise InvalidRequestError(f"top must be >= 1, got {top}", field="top")
    est: Any
    if isinstance(train, str):
        method, train = train, True
    target = _model_arg(model)
    gpus = _gpus_arg(gpus)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # shown in the output below (text and --json), not on stderr
        est = _estimate(target, train=bool(train), method=method, context=context, batch=batch, quant=quant,
                        kv_dtype=kv_dtype, zero_stage=zero_stage, gpu_count=gpu_count, train_options=train_options,
                        runtime=runtime, gpu_memory_utilization=gpu_memory_utilization,
                        flash_attention=flash_attention, expert_parallel=expert_parallel,
                        vllm_version=vllm_version, transformers_version=transformers_version,
                        sglang_version=sglang_version, prompt_tokens=prompt_tokens, mlx_lm_version=mlx_lm_version)
    warned = _warnings(est, caught)
    result = pick_hardware(est, max_gpus=max_gpus, objective=objective, budget_per_hour=budget_per_hour,
                           gpus=gpus, gpu_count=gpu_count)
    if train:
        extras = [f"{est.optimizer}", f"checkpointing {est.gradient_checkpointing}"]
        if est.method != "full":
            extras.append(f"LoRA rank {est.lora_rank}")
        if est.offload_optimizer or est.offload_params:
            extras.append("offload " + "+".join(n for n, on in (("optimizer", est.offload_optimizer),
                                                                 ("params", est.offload_params)) if on))
        head = (f"Plan: {model} (training, {est.method}, ZeRO-{est.zero_stage}, {', '.join(extras)}), "
                f"seq_len {context}, micro-batch {batch}")
    else:
        head = (f"Plan: {model} (inference, {est.runtime}), quant {est.quant_label}, context {context}, "
                f"batch {batch}")
    mem_lines, mem = _memory_section(est, train)
    limits = None if train or not len(result) else _limits(est, result[0])
    if not train:
        warned += _cuda_total_warnings(str(est.runtime), list(result)[:top])
    lines = [head, "", *mem_lines]
    if limits is not None:
        lines += ["", limits["text"]]
    if warned:
        lines += ["", "Warnings:", *(f"  ! {w}" for w in warned)]
    lines += ["", pick_text(result, top=top)]
    hidden = max(0, len(result) - top)
    if hidden:
        lines.append(f"{hidden} more workable option{'s' if hidden > 1 else ''} not shown; "
                     f"see all with --top {len(result)}")
    if isinstance(target, float):
        lines.insert(1, f"(architecture assumed from a bare size of {target:g}B parameters: figures are "
                        "approximate; name a catalog model or a config.json for exact ones)")
    data: dict[str, object] = {
        "model": model, "mode": "training" if train else "inference",
        "quant": None if train else est.quant, "quant_as_shipped": False if train else est.quant_as_shipped,
        "context": context,
        "runtime": None if train else est.runtime,
        "batch": batch, "objective": objective, "memory": mem,
        "options": [o.to_dict() for o in list(result)[:top]],
        "decode_ranges_overlap": [[a.label, b.label] for a, b in result.overlapping(top)],
        "rejected": [o.to_dict() for o in result.rejected],
        "api_comparison": None,
        "limits": limits,
        "hidden_options": hidden,
        "warnings": warned,
    }
    if api_model is not None:
        section, comparison = _api_section(result, api_model, tokens_per_day, utilization, input_fraction)
        lines += ["", *section]
        data["api_comparison"] = comparison
    return "\n".join(lines), data


def _cuda_total_warnings(runtime: str, shown: Sequence[Any]) -> list[str]:
    """One warning naming the shown GPUs sized from the driver's figure where ``runtime`` uses CUDA's total."""
    from ..estimator._common import CUDA_TOTAL_RUNTIMES, cuda_total_warning

    if runtime not in CUDA_TOTAL_RUNTIMES:
        return []
    names = list(dict.fromkeys(o.gpu.name for o in shown if o.gpu.cuda_total_gib is None))
    return [cuda_total_warning(runtime, ", ".join(names))] if names else []


def _warnings(est: object, caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """The estimate's warnings, then any Python warning raised while building it that they do not repeat."""
    out = [str(w) for w in getattr(est, "warnings", ())]
    for w in caught:
        text = str(w.message)
        if text not in out and not any(o in text or text in o for o in out) and "bare parameter count" not in text:
            out.append(text)
    return out


def _estimate(target: str | float, *, train: bool, method: str, context: int, batch: int, quant: str | None,
              kv_dtype: str | None, zero_stage: int, gpu_count: int | None, train_options: Mapping[str, Any] | None,
              runtime: str, gpu_memory_utilization: float | None, flash_attention: bool,
              expert_parallel: bool = False, vllm_version: str = DEFAULT_VLLM_VERSION,
              transformers_version: str | None = None, sglang_version: str | None = None,
              prompt_tokens: int | None = None, mlx_lm_version: str | None = None) -> object:
    from ..estimator import estimate_inference_memory, estimate_training_memory

    if train:
        return estimate_training_memory(target, method=method, seq_len=context, micro_batch=batch,
                                        zero_stage=zero_stage, num_gpus=gpu_count or 1, **dict(train_options or {}))
    return estimate_inference_memory(target, quant=quant, context=context, batch=batch, kv_dtype=kv_dtype,
                                     tensor_parallel=1, runtime=runtime,
                                     gpu_memory_utilization=gpu_memory_utilization, flash_attention=flash_attention,
                                     expert_parallel=expert_parallel, vllm_version=vllm_version,
                                     transformers_version=transformers_version, sglang_version=sglang_version,
                                     prompt_tokens=prompt_tokens, mlx_lm_version=mlx_lm_version)


def _limits(est: Any, option: Any) -> dict[str, Any]:
    """The longest context and the largest batch the best option holds (``max_context`` / ``max_batch``)."""
    from types import SimpleNamespace

    from ..estimator import max_batch, max_context

    device = SimpleNamespace(memory_gb=option.gpu.memory_per_device_gb, name=option.gpu.name,
                             cuda_total_gib=option.gpu.cuda_total_gib)
    n = int(option.tensor_parallel)
    with warnings.catch_warnings():  # a missing CUDA total is reported once, under Warnings
        warnings.simplefilter("ignore", UserWarning)
        ctx = max_context(est, device, n, batch=int(est.batch))
        seqs = max_batch(est, device, int(est.context), n)
    where = "this GPU" if option.count == 1 else f"these {option.count} GPUs"
    cap = int(getattr(getattr(est, "architecture", None), "max_position_embeddings", 0) or 0)
    capped = bool(cap) and ctx >= cap
    why = f" (the model's own limit, max_position_embeddings {cap:,}; memory would hold more)" if capped else ""
    text = (f"Limits ({option.label}): at most {ctx:,} tokens of context on {where} at batch {est.batch}{why}; "
            f"at most {seqs:,} sequence{'s' if seqs != 1 else ''} of {est.context:,} tokens")
    return {"gpu": option.gpu.id, "count": option.count, "max_context": ctx, "max_context_capped_by_model": capped,
            "max_batch": seqs, "text": text}


def _api_section(result: Sequence[Any], api_model: str, tokens_per_day: float | None, utilization: float,
                 input_fraction: float | None) -> tuple[list[str], dict[str, object]]:
    from ..pricing import break_even, price_for

    volume = DEFAULT_TOKENS_PER_DAY if tokens_per_day is None else tokens_per_day
    entry = price_for(api_model)
    lines = [f"API comparison: {entry.model} ({entry.source}, as of {entry.as_of}), "
             f"{volume:,.0f} tokens/day, utilization {utilization:g}"]
    usable = [o for o in result if o.price_per_hour is not None and o.decode_tokens_per_s]
    if not usable:
        lines.append("  no priced inference option to compare with")
        return lines, {"api_model": entry.model, "tokens_per_day": volume, "break_even": None}
    be = break_even(api_model=api_model, option=usable[0], tokens_per_day=volume, utilization=utilization,
                    input_fraction=input_fraction)
    lines += ["  " + ln for ln in be.arithmetic.splitlines()]
    saving = abs(be.annual_savings_self_host)
    verdict = {"api": f"the API is cheaper by ${saving:,.0f}/year",
               "self-host": f"self-hosting is cheaper by ${saving:,.0f}/year", "equal": "they cost the same"}
    lines.append(f"  At {volume:,.0f} tokens/day {verdict[be.cheaper]}")
    return lines, {"api_model": entry.model, "tokens_per_day": volume, "break_even": be.to_dict()}

"""Solvers on top of ``fits()``: the longest context and the largest batch a GPU setup holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._exceptions import InvalidRequestError
from ._catalog import ModelLike
from ._common import check_int, warn_once
from ._inference import InferenceEstimate, estimate_inference_memory

__all__ = ["max_batch", "max_context"]


def _base(model: ModelLike | InferenceEstimate, quant: str | None, options: dict[str, Any],
          **request: int) -> InferenceEstimate:
    """An estimate to vary: ``model`` itself when it is one (then no options), else a new one."""
    if isinstance(model, InferenceEstimate):
        if options or quant is not None:
            raise InvalidRequestError("an InferenceEstimate already carries quant and options; pass them when "
                                      "building it", field="model", reason="options with an estimate")
        return model.with_options(**request)
    return estimate_inference_memory(model, quant, **{**options, **request})


def _fits(base: InferenceEstimate, gpu: object, count: int) -> Callable[[InferenceEstimate], bool]:
    """``fits`` without a warning per probe: the rule's warnings (same for every probe) are raised once here."""
    for text in base.memory_check(gpu, count).warnings:
        warn_once(text, stacklevel=3)
    return lambda est: bool(est.memory_check(gpu, count).fits)


def _largest(ok: Callable[[int], bool], step: int, limit: int) -> int:
    """Largest multiple of ``step`` up to ``limit`` with ``ok`` true (``ok`` falls as the value grows); 0 if none."""
    lo, hi = 0, limit // step  # invariant: ok(lo * step) (or lo == 0), not ok above hi * step
    if hi and ok(hi * step):
        return hi * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid * step):
            lo = mid
        else:
            hi = mid
    return lo * step


def max_context(
    model: ModelLike | InferenceEstimate,
    gpu: object,
    count: int = 1,
    *,
    quant: str | None = None,
    batch: int = 1,
    step: int = 256,
    limit: int | None = None,
    **options: object,
) -> int:
    """The longest context (a multiple of ``step``) at which ``batch`` sequences fit ``count`` GPUs.

    Same rule as ``fits()`` (the runtime's own memory rule, applied once): the estimate fits at the
    answer and not at ``answer + step``, unless the answer is the model's ``max_position_embeddings``
    (or ``limit``). ``options`` go to ``estimate_inference_memory`` (``runtime``, ``kv_dtype``, ...);
    ``model`` may also be an ``InferenceEstimate``. Returns 0 when not even ``step`` tokens fit.
    """
    check_int(count, "count")
    check_int(step, "step")
    check_int(batch, "batch")
    base = _base(model, quant, options, batch=batch, context=step)
    cap = check_int(limit, "limit") if limit is not None else base.architecture.max_position_embeddings
    fits = _fits(base, gpu, count)
    return _largest(lambda c: fits(base.with_options(context=c)), step, cap)


def max_batch(
    model: ModelLike | InferenceEstimate,
    gpu: object,
    context: int,
    count: int = 1,
    *,
    quant: str | None = None,
    limit: int = 65536,
    **options: object,
) -> int:
    """The most sequences of ``context`` tokens that fit ``count`` GPUs together (0 if not even one).

    Uses ``fits()``: it holds at the answer and not at ``answer + 1`` (unless the answer is ``limit``).
    """
    check_int(count, "count")
    check_int(context, "context")
    base = _base(model, quant, options, context=context)
    fits = _fits(base, gpu, count)
    return _largest(lambda b: fits(base.with_options(batch=b)), 1, check_int(limit, "limit"))

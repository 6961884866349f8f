"""``cost_of``: the USD cost of one completion from its usage block."""

from __future__ import annotations

from collections.abc import Mapping

from ._catalog import _lookup

__all__ = ["completion_cost", "cost_of"]


def _get(obj: object, name: str) -> object:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _int(v: object) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        return None
    return int(v)


def _tokens(usage: object) -> tuple[int, int, int] | None:
    """(prompt, completion, cached) tokens from an OpenAI- or Anthropic-style usage block."""
    prompt = _int(_get(usage, "prompt_tokens"))
    completion = _int(_get(usage, "completion_tokens"))
    if prompt is not None or completion is not None:
        details = _get(usage, "prompt_tokens_details")
        cached = _int(_get(details, "cached_tokens")) if details is not None else None
        return prompt or 0, completion or 0, cached or 0
    inp = _int(_get(usage, "input_tokens"))
    out = _int(_get(usage, "output_tokens"))
    if inp is None and out is None:
        return None
    # Anthropic: input_tokens excludes cache reads/writes; cache reads bill at the cached rate.
    read = _int(_get(usage, "cache_read_input_tokens")) or 0
    write = _int(_get(usage, "cache_creation_input_tokens")) or 0
    return (inp or 0) + read + write, out or 0, read


def cost_of(usage_or_response: object, model: str | None = None) -> float | None:
    """USD cost of one completion, or ``None`` when the model has no price or no usage is present.

    Accepts a response object or dict with ``.usage`` and ``.model``, or a bare usage object/dict
    (then pass ``model``). Usage may be OpenAI style (``prompt_tokens``, ``completion_tokens``,
    ``prompt_tokens_details.cached_tokens``) or Anthropic style (``input_tokens``, ``output_tokens``,
    ``cache_read_input_tokens``). An explicit ``model`` wins over the response's own.
    """
    usage = _get(usage_or_response, "usage")
    if usage is None:
        usage = usage_or_response
    name = model if model is not None else _get(usage_or_response, "model")
    if not isinstance(name, str) or not name:
        return None
    counts = _tokens(usage)
    if counts is None:
        return None
    return completion_cost(name, *counts)


def completion_cost(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float | None:
    """USD for one completion of ``model`` from typed token counts (negative counts read as 0); ``None``
    when the model has no price. The fast path behind ``ChatCompletion.cost``."""
    entry = _lookup(model) if model else None
    if entry is None:
        return None
    # Conditionals, not max(): this runs for every priced response and builtin max() costs several times more.
    return entry.cost(prompt_tokens if prompt_tokens > 0 else 0, completion_tokens if completion_tokens > 0 else 0,
                      cached_tokens if cached_tokens > 0 else 0)

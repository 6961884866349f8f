"""Break-even between an API model and a self-hosted option, and API-vs-API comparisons.

Self-hosting model (documented in docs/hardware.md):

* one replica is the option's GPUs, rented 24 h a day at ``price_per_hour``;
* it serves ``86,400 x utilization / s_per_token`` tokens a day, where ``s_per_token`` is
  ``1 / decode`` (every token counted as generated) or, with ``input_fraction`` f,
  ``f / prefill + (1 - f) / decode``;
* the daily cost is ``ceil(tokens_per_day / capacity)`` replicas x 24 x ``price_per_hour``.

The API side costs ``tokens_per_day / 1e6 x api $/M`` (``ModelPrice.per_million(input_fraction)``).
Break-even is the daily volume at which one replica costs the same as the API; it exists only when
that volume fits one replica's capacity, i.e. when self-hosting at that utilisation is cheaper per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from .._exceptions import InvalidRequestError
from ._catalog import _check_fraction, price_for

__all__ = ["ApiComparison", "BreakEven", "SelfHostOption", "break_even", "compare_api_costs"]


class SelfHostOption(Protocol):
    """What ``break_even`` needs from a hardware option (``holysheep.hardware.HardwareOption`` fits)."""

    @property
    def price_per_hour(self) -> float | None: ...

    @property
    def decode_tokens_per_s(self) -> float | None: ...

    @property
    def prefill_tokens_per_s(self) -> float | None: ...


@dataclass(frozen=True)
class BreakEven:
    """Daily API cost vs daily self-hosting cost; ``arithmetic`` shows every step."""

    api_model: str
    api_price_per_m: float
    tokens_per_day: float
    utilization: float
    input_fraction: float | None
    option_label: str
    price_per_hour: float
    capacity_tokens_per_day: float
    replicas: int
    api_cost_per_day: float
    self_host_cost_per_day: float
    self_host_cost_per_m: float
    break_even_tokens_per_day: float | None
    arithmetic: str

    @property
    def cheaper(self) -> str:
        """``"api"``, ``"self-host"`` or ``"equal"`` at ``tokens_per_day``."""
        if math.isclose(self.api_cost_per_day, self.self_host_cost_per_day, rel_tol=1e-9):
            return "equal"
        return "api" if self.api_cost_per_day < self.self_host_cost_per_day else "self-host"

    @property
    def annual_savings_self_host(self) -> float:
        """(API - self-host) x 365; negative when the API is cheaper."""
        return (self.api_cost_per_day - self.self_host_cost_per_day) * 365

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, including ``cheaper`` and ``annual_savings_self_host``."""
        d = dict(vars(self))
        d.update(cheaper=self.cheaper, annual_savings_self_host=self.annual_savings_self_host)
        return d

    def __str__(self) -> str:
        return self.arithmetic


def _label(option: object) -> str:
    label = getattr(option, "label", None)
    if isinstance(label, str):
        return label
    g, n = getattr(option, "gpu", None), getattr(option, "count", None)
    name = getattr(g, "name", None)
    return f"{n}x {name}" if name and n else "self-hosted option"


def _usd(x: float) -> str:
    return f"${x:,.2f}"


def _usd_m(x: float) -> str:
    """A $/M-token rate: three decimals so that $0.315 is not shown as $0.32."""
    return f"${x:,.3f}"


def break_even(
    *,
    api_model: str,
    option: SelfHostOption,
    tokens_per_day: float,
    utilization: float = 0.5,
    input_fraction: float | None = None,
) -> BreakEven:
    """Compare ``tokens_per_day`` on ``api_model`` with serving them on ``option`` (see module docs).

    ``utilization`` is the share of the replica's roofline throughput actually used over a day.
    ``input_fraction`` is the share of tokens that are prompt tokens; ``None`` prices every token at
    the blended (else output) price and serves it at decode speed.
    """
    if not 0 < utilization <= 1:
        raise InvalidRequestError(
            f"utilization must be in (0, 1], got {utilization!r}", field="utilization", reason="out of range"
        )
    if not tokens_per_day >= 0:
        raise InvalidRequestError(
            f"tokens_per_day must be >= 0, got {tokens_per_day!r}", field="tokens_per_day", reason="negative"
        )
    if input_fraction is not None:
        _check_fraction(input_fraction)
    entry = price_for(api_model)
    api_m = entry.per_million(input_fraction)
    if api_m is None:
        raise InvalidRequestError(f"{entry.model} has no usable price; set one with set_price()", field="api_model")
    hourly, decode = option.price_per_hour, option.decode_tokens_per_s
    if hourly is None or decode is None or decode <= 0:
        raise InvalidRequestError(
            "the option needs price_per_hour and decode_tokens_per_s; register a price for the GPU "
            "(holysheep.hardware.register_gpus) or pick another option",
            field="option",
            reason="no price or throughput",
        )
    prefill = option.prefill_tokens_per_s
    lines = [f"API: {entry.model} at {_usd_m(api_m)}/M tokens"]
    if input_fraction is not None and prefill:
        s_tok = input_fraction / prefill + (1 - input_fraction) / decode
        lines.append(
            f"Self-host time per token = {input_fraction:g}/{prefill:,.0f} + {1 - input_fraction:g}/{decode:,.1f}"
            f" = {s_tok:.3g} s"
        )
    else:
        s_tok = 1 / decode
        lines.append(f"Self-host time per token = 1/{decode:,.1f} tok/s = {s_tok:.3g} s (all tokens decoded)")
    capacity = 86_400 * utilization / s_tok
    replicas = max(1, math.ceil(tokens_per_day / capacity)) if tokens_per_day > 0 else 1
    day_one = hourly * 24
    api_day = tokens_per_day / 1e6 * api_m
    self_day = replicas * day_one
    self_m = day_one / capacity * 1e6
    be = day_one / api_m * 1e6 if api_m > 0 else None
    if be is not None and be > capacity:
        be = None
    label = _label(option)
    lines += [
        f"Capacity of one replica ({label}) = 86,400 s x {utilization:g} / {s_tok:.3g} s = {capacity:,.0f} tokens/day",
        f"API cost/day = {tokens_per_day:,.0f} / 1e6 x {_usd_m(api_m)} = {_usd(api_day)}",
        f"Self-host cost/day = {replicas} replica(s) x 24 h x {_usd(hourly)}/h = {_usd(self_day)}"
        f" ({_usd_m(self_m)}/M tokens for a replica at {utilization:.0%} utilization)",
    ]
    if be is not None:
        lines.append(f"Break-even = 24 h x {_usd(hourly)} / {_usd_m(api_m)} x 1e6 = {be:,.0f} tokens/day")
    else:
        lines.append(
            f"No break-even: self-hosting costs {_usd_m(self_m)}/M at this utilization, above the API's "
            f"{_usd_m(api_m)}/M, so the API is cheaper at every volume"
        )
    return BreakEven(
        api_model=entry.model,
        api_price_per_m=api_m,
        tokens_per_day=float(tokens_per_day),
        utilization=utilization,
        input_fraction=input_fraction,
        option_label=label,
        price_per_hour=hourly,
        capacity_tokens_per_day=capacity,
        replicas=replicas,
        api_cost_per_day=api_day,
        self_host_cost_per_day=self_day,
        self_host_cost_per_m=self_m,
        break_even_tokens_per_day=be,
        arithmetic="\n".join(lines),
    )


@dataclass(frozen=True)
class ApiComparison:
    """Cost of the same daily volume on two API models."""

    model_a: str
    model_b: str
    price_a_per_m: float
    price_b_per_m: float
    tokens_per_day: float
    cost_a_per_day: float
    cost_b_per_day: float
    annual_savings: float
    """(cost_a - cost_b) x 365: what moving from A to B saves a year."""
    arithmetic: str

    def __str__(self) -> str:
        return self.arithmetic


def compare_api_costs(
    model_a: str, model_b: str, *, tokens_per_day: float, input_fraction: float | None = None
) -> ApiComparison:
    """Daily and annual cost of ``tokens_per_day`` on ``model_a`` vs ``model_b``, with the arithmetic."""
    pa = price_for(model_a)
    pb = price_for(model_b)
    a, b = pa.per_million(input_fraction), pb.per_million(input_fraction)
    if a is None or b is None:
        raise InvalidRequestError("both models need a price; set one with set_price()", field="model")
    ca, cb = tokens_per_day / 1e6 * a, tokens_per_day / 1e6 * b
    text = "\n".join(
        [
            f"{pa.model}: {tokens_per_day:,.0f} / 1e6 x {_usd_m(a)} = {_usd(ca)}/day",
            f"{pb.model}: {tokens_per_day:,.0f} / 1e6 x {_usd_m(b)} = {_usd(cb)}/day",
            f"Annual difference = ({_usd(ca)} - {_usd(cb)}) x 365 = {_usd((ca - cb) * 365)}",
        ]
    )
    return ApiComparison(pa.model, pb.model, a, b, float(tokens_per_day), ca, cb, (ca - cb) * 365, text)

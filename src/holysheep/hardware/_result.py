"""A picker's answer: ``HardwareOption`` rows and ``PickResult``, with their text and HTML rendering."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from ..accelerators import GPU
from ..accelerators._text import format_table, html_table, number
from ._intervals import overlap

__all__ = ["OPTION_HEADERS", "HardwareOption", "PickResult", "decode_text", "option_cells", "pick_html", "pick_text"]

OPTION_HEADERS = ("option", "fit", "GB/GPU", "headroom", "decode tok/s", "b=1 tok/s", "prefill tok/s",
                  "$/h", "$/M tok")


@dataclass(frozen=True)
class HardwareOption:
    """One GPU type at one count. ``reason`` is ``None`` for a workable option, else why it was rejected."""

    gpu: GPU
    count: int
    fits: bool
    per_gpu_gb: float | None
    usable_gb_per_gpu: float
    headroom_gb: float | None
    tensor_parallel: int
    decode_tokens_per_s: float | None = None
    decode_interval: tuple[float, float] | None = None
    """80 % range of ``decode_tokens_per_s`` from the model's held-out errors on rows like it (``_intervals``);
    ``--json``: ``decode_tokens_per_s_interval``."""
    decode_tokens_per_s_batch1: float | None = None
    prefill_tokens_per_s: float | None = None
    train_tokens_per_s: float | None = None
    price_per_hour: float | None = None
    cost_per_million_tokens: float | None = None
    notes: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    """Where the speed figures lie outside what the published validation rows check (``_coverage``)."""
    reason: str | None = None
    reason_code: str | None = None
    """``does_not_fit``, ``no_native_precision``, ``heads_not_divisible``, ``runtime_limit``, ``over_budget`` or
    ``no_price``."""

    @property
    def label(self) -> str:
        """``"2x H100 SXM5 80GB"``."""
        return f"{self.count}x {self.gpu.name}"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (the GPU as its id and name)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("gpu", "decode_interval")}
        d["decode_tokens_per_s_interval"] = None if self.decode_interval is None else list(self.decode_interval)
        d["notes"] = list(self.notes)
        d["caveats"] = list(self.caveats)
        d.update(gpu=self.gpu.id, gpu_name=self.gpu.name, label=self.label)
        return d


class PickResult(list[HardwareOption]):
    """Workable options, best first; ``.rejected`` holds one rejected option per unusable GPU."""

    def __init__(self, options: Iterable[HardwareOption], rejected: Iterable[HardwareOption], objective: str,
                 estimate: object = None) -> None:
        super().__init__(options)
        self.rejected: list[HardwareOption] = list(rejected)
        self.objective = objective
        self.estimate = estimate

    def overlapping(self, top: int | None = None) -> list[tuple[HardwareOption, HardwareOption]]:
        """Neighbouring options (of the first ``top``) whose decode ranges overlap: the model cannot say
        which of the two is faster."""
        opts = list(self)[:top] if top else list(self)
        return [(a, b) for a, b in pairwise(opts) if overlap(a.decode_interval, b.decode_interval)]

    def __str__(self) -> str:
        return pick_text(self)

    def _repr_html_(self) -> str:
        return pick_html(self)



def decode_text(o: HardwareOption) -> str:
    """``"310.2 (240–390)"``: the decode figure and its 80 % range."""
    if o.decode_tokens_per_s is None:
        return number(None)
    if o.decode_interval is None:
        return number(o.decode_tokens_per_s, "{:,.1f}")
    return f"{o.decode_tokens_per_s:,.1f} ({_span(o.decode_interval)})"


def _digits(x: float) -> int:
    return 0 if x >= 10 else 1


def option_cells(o: HardwareOption) -> list[str]:
    """One table row for a picker option."""
    return [
        o.label, "yes" if o.fits else "no", number(o.per_gpu_gb, "{:.1f}"), number(o.headroom_gb, "{:+.1f}"),
        number(o.train_tokens_per_s, "{:,.1f}") if o.train_tokens_per_s is not None else decode_text(o),
        number(o.decode_tokens_per_s_batch1, "{:,.1f}"), number(o.prefill_tokens_per_s),
        number(o.price_per_hour, "{:,.2f}"), number(o.cost_per_million_tokens, "{:,.3f}"),
    ]


def _rejected_rows(result: PickResult) -> list[list[str]]:
    return [[o.gpu.name, o.reason or ""] for o in result.rejected]


def _headers(result: PickResult) -> tuple[str, ...]:
    if any(o.train_tokens_per_s is not None for o in result):
        return ("option", "fit", "GB/GPU", "headroom", "train tok/s", "-", "-", "$/h", "$/M tok")
    return OPTION_HEADERS


def pick_text(result: PickResult, top: int | None = None) -> str:
    """Options (best first), then rejected GPUs with their reasons."""
    opts = list(result)[:top] if top else list(result)
    parts = [f"Options (objective: {result.objective})"]
    parts.append(format_table(_headers(result), [option_cells(o) for o in opts]) if opts else "  (none)")
    for o in opts:
        if o.notes:
            parts.append(f"  {o.label}: " + "; ".join(o.notes))
        if o.caveats:
            parts.append(f"  {o.label}: not validated: " + "; ".join(c.removeprefix("speed: ") for c in o.caveats))
    if any(o.decode_interval for o in opts):
        parts.append("  decode tok/s (low–high): the range 80 % of published figures like it fell in, held out")
    pairs = result.overlapping(top)
    if pairs:
        parts.append("  decode ranges overlap, so the model cannot tell which is faster: "
                     + "; ".join(f"{a.label} and {b.label}" for a, b in pairs))
    if result.rejected:
        parts.append("Rejected")
        parts.append(format_table(("gpu", "reason"), _rejected_rows(result)))
    return "\n".join(parts)


def _span(r: tuple[float, float]) -> str:
    return f"{r[0]:,.{_digits(r[0])}f}–{r[1]:,.{_digits(r[0])}f}"


def pick_html(result: PickResult) -> str:
    """Options and rejections as two HTML tables."""
    out = html_table(_headers(result), [option_cells(o) for o in result], f"Options (objective: {result.objective})")
    if result.rejected:
        out += html_table(("gpu", "reason"), _rejected_rows(result), "Rejected")
    return out

"""A picker's answer: ``HardwareOption`` rows and ``PickResult``, with their text and HTML rendering."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..accelerators import GPU
from ..accelerators._text import format_table, html_table, number

__all__ = ["OPTION_HEADERS", "HardwareOption", "PickResult", "option_cells", "pick_html", "pick_text"]

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
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "gpu"}
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

    def __str__(self) -> str:
        return pick_text(self)

    def _repr_html_(self) -> str:
        return pick_html(self)



def option_cells(o: HardwareOption) -> list[str]:
    """One table row for a picker option."""
    tok = o.decode_tokens_per_s if o.train_tokens_per_s is None else o.train_tokens_per_s
    return [
        o.label, "yes" if o.fits else "no", number(o.per_gpu_gb, "{:.1f}"), number(o.headroom_gb, "{:+.1f}"),
        number(tok, "{:,.1f}"), number(o.decode_tokens_per_s_batch1, "{:,.1f}"), number(o.prefill_tokens_per_s),
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
    if result.rejected:
        parts.append("Rejected")
        parts.append(format_table(("gpu", "reason"), _rejected_rows(result)))
    return "\n".join(parts)


def pick_html(result: PickResult) -> str:
    """Options and rejections as two HTML tables."""
    out = html_table(_headers(result), [option_cells(o) for o in result], f"Options (objective: {result.objective})")
    if result.rejected:
        out += html_table(("gpu", "reason"), _rejected_rows(result), "Rejected")
    return out

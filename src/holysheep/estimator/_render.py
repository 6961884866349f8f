"""Plain-text and HTML rendering of memory breakdowns."""

from __future__ import annotations

import html

from ._common import GB, GIB

__all__ = ["render_html", "render_text"]

_COLORS = {
    "weights": "#4e79a7",
    "kv_cache": "#f28e2b",
    "activations": "#59a14f",
    "overhead": "#bab0ac",
    "gradients": "#e15759",
    "optimizer": "#76b7b2",
    "master_weights": "#edc948",
}


def _gib(gb: float) -> float:
    return gb * GB / GIB


def render_text(
    title: str,
    breakdown: dict[str, float],
    gpus: int,
    assumptions: list[str],
    warnings: list[str],
    extra: list[str] | None = None,
) -> str:
    """A fixed-width table: one row per component, GB and GiB per GPU, share of the total."""
    total = sum(breakdown.values())
    w = max(len(k) for k in [*breakdown, "total per GPU"])
    lines = [title, f"{'component':<{w}}  {'GB':>10}  {'GiB':>10}  {'share':>6}", "-" * (w + 34)]
    for k, v in breakdown.items():
        share = 100 * v / total if total else 0.0
        lines.append(f"{k:<{w}}  {v:>10.2f}  {_gib(v):>10.2f}  {share:>5.1f}%")
    lines.append("-" * (w + 34))
    lines.append(f"{'total per GPU':<{w}}  {total:>10.2f}  {_gib(total):>10.2f}")
    if gpus > 1:
        lines.append(f"{f'x {gpus} GPUs':<{w}}  {total * gpus:>10.2f}  {_gib(total * gpus):>10.2f}")
    lines += extra or []
    lines += [f"assumes: {a}" for a in assumptions]
    lines += [f"warning: {x}" for x in warnings]
    return "\n".join(lines)


def render_html(title: str, breakdown: dict[str, float], gpus: int, assumptions: list[str], warnings: list[str]) -> str:
    """An HTML table with a stacked bar of the per-GPU components (for Jupyter)."""
    total = sum(breakdown.values()) or 1.0
    bar = "".join(
        f'<div title="{html.escape(k)}: {v:.2f} GB" style="width:{100 * v / total:.3f}%;'
        f'background:{_COLORS.get(k, "#999")};height:100%"></div>'
        for k, v in breakdown.items()
        if v > 0
    )
    rows = "".join(
        f'<tr><td><span style="display:inline-block;width:.8em;height:.8em;'
        f'background:{_COLORS.get(k, "#999")}"></span> {html.escape(k)}</td>'
        f"<td style='text-align:right'>{v:.2f}</td><td style='text-align:right'>{_gib(v):.2f}</td></tr>"
        for k, v in breakdown.items()
    )
    s = sum(breakdown.values())
    rows += (
        f"<tr><th>total per GPU</th><th style='text-align:right'>{s:.2f}</th>"
        f"<th style='text-align:right'>{_gib(s):.2f}</th></tr>"
    )
    if gpus > 1:
        rows += (
            f"<tr><td>x {gpus} GPUs</td><td style='text-align:right'>{s * gpus:.2f}</td>"
            f"<td style='text-align:right'>{_gib(s * gpus):.2f}</td></tr>"
        )
    notes = "".join(f"<li>{html.escape(a)}</li>" for a in assumptions)
    warns = "".join(f"<li style='color:#b00'>{html.escape(x)}</li>" for x in warnings)
    return (
        f"<div class='holysheep-estimate'><strong>{html.escape(title)}</strong>"
        f"<div style='display:flex;width:100%;max-width:640px;height:18px;border:1px solid #ccc;"
        f"margin:6px 0'>{bar}</div>"
        f"<table><thead><tr><th>component</th><th>GB</th><th>GiB</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<ul>{warns}{notes}</ul></div>"
    )

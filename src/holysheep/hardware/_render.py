"""Plain-text and HTML rendering of the GPU table and of picker results (no third-party imports)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._table import GPU

if TYPE_CHECKING:  # pragma: no cover
    from ._picker import HardwareOption, PickResult

__all__ = ["format_table", "gpus_html", "gpus_text", "option_cells", "pick_html", "pick_text"]

GPU_HEADERS = ("id", "name", "mem GB", "BW GB/s", "BF16", "FP8", "INT8", "FP4", "TDP W", "sparse", "$/GPU-h")
OPTION_HEADERS = ("option", "fit", "GB/GPU", "headroom", "decode tok/s", "b=1 tok/s", "prefill tok/s",
                  "$/h", "$/M tok")


def _n(v: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if v is None else fmt.format(v)


def _tf(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}".removesuffix(".0")


def gpu_cells(g: GPU) -> list[str]:
    """One table row for a GPU (dense figures; ``-`` where not published)."""
    bf16 = g.tflops("bf16")
    return [
        g.id, g.name, f"{g.memory_gb:g}", f"{g.bandwidth_gb_s:,g}",
        _tf(bf16) if bf16 is not None else (_tf(g.tflops("fp16")) + " (fp16)" if g.tflops("fp16") else "-"),
        _tf(g.tflops("fp8")), _tf(g.tflops("int8")), _tf(g.tflops("fp4")),
        _n(g.tdp_w), "2:4" if g.supports_sparsity else "no",
        _n(g.price_per_hour, "{:,.2f}"),
    ]


def option_cells(o: HardwareOption) -> list[str]:
    """One table row for a picker option."""
    tok = o.decode_tokens_per_s if o.train_tokens_per_s is None else o.train_tokens_per_s
    return [
        o.label, "yes" if o.fits else "no", _n(o.per_gpu_gb, "{:.1f}"), _n(o.headroom_gb, "{:+.1f}"),
        _n(tok, "{:,.1f}"), _n(o.decode_tokens_per_s_batch1, "{:,.1f}"), _n(o.prefill_tokens_per_s),
        _n(o.price_per_hour, "{:,.2f}"), _n(o.cost_per_million_tokens, "{:,.3f}"),
    ]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned first two columns, right-aligned numbers, one space-padded line per row."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def gpus_text(rows: Sequence[GPU]) -> str:
    """The GPU table as text; compute columns are dense TFLOPS/TOPS."""
    body = format_table(GPU_HEADERS, [gpu_cells(g) for g in rows])
    return body + "\nDense tensor peaks (TFLOPS/TOPS, FP32 accumulate); 2:4 sparse = 2x where marked. " \
        "$/GPU-h = lowest list price in the table."


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def gpus_html(rows: Sequence[GPU]) -> str:
    """The GPU table as an HTML ``<table>`` (for Jupyter)."""
    return _html_table(GPU_HEADERS, [gpu_cells(g) for g in rows], "Dense tensor peaks; $/GPU-h = lowest list")


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
    if result.rejected:
        parts.append("Rejected")
        parts.append(format_table(("gpu", "reason"), _rejected_rows(result)))
    return "\n".join(parts)


def pick_html(result: PickResult) -> str:
    """Options and rejections as two HTML tables."""
    out = _html_table(_headers(result), [option_cells(o) for o in result], f"Options (objective: {result.objective})")
    if result.rejected:
        out += _html_table(("gpu", "reason"), _rejected_rows(result), "Rejected")
    return out

"""Plain-text and HTML rendering of the accelerator table (no third-party imports)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ._specs import GPU

__all__ = ["GPUTable", "format_table", "gpu_cells", "gpus_html", "gpus_text", "html_table", "number"]

GPU_HEADERS = ("id", "name", "mem GB (GiB)", "BW GB/s", "BF16", "FP8", "INT8", "FP4", "TDP W", "sparse", "$/GPU-h")


def number(v: float | None, fmt: str = "{:,.0f}") -> str:
    """``fmt`` applied to ``v``, or ``-`` for ``None``."""
    return "-" if v is None else fmt.format(v)


def _tf(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}".removesuffix(".0")


def gpu_cells(g: GPU) -> list[str]:
    """One table row for a GPU (dense figures; ``-`` where not published)."""
    bf16 = g.tflops("bf16")
    return [
        g.id, g.name, f"{g.memory_gb:.1f} ({g.memory_gb * 1e9 / 2**30:.1f})",
        f"{g.bandwidth_gb_s:,g}",
        _tf(bf16) if bf16 is not None else (_tf(g.tflops("fp16")) + " (fp16)" if g.tflops("fp16") else "-"),
        _tf(g.tflops("fp8")), _tf(g.tflops("int8")), _tf(g.tflops("fp4")),
        number(g.tdp_w), "2:4" if g.supports_sparsity else "no",
        number(g.price_per_hour, "{:,.2f}"),
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
    return body + "\nmem = the capacity the device reports, in GB (10^9 B) and GiB (2^30 B): a datasheet's " \
        "\"24 GB\" is 24 GiB of chips, less 1/16 where ECC is on (L4: 22.4 GiB).\nDense tensor peaks " \
        "(TFLOPS/TOPS, FP32 accumulate); 2:4 sparse = 2x where marked. $/GPU-h = lowest list price in the table."


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    """An HTML ``<table>`` with escaped cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def gpus_html(rows: Sequence[GPU]) -> str:
    """The GPU table as an HTML ``<table>`` (for Jupyter)."""
    return html_table(GPU_HEADERS, [gpu_cells(g) for g in rows], "Dense tensor peaks; $/GPU-h = lowest list")


class GPUTable(list[GPU]):
    """A list of ``GPU`` rows that prints as a text table and renders as HTML in Jupyter."""

    def __str__(self) -> str:
        return gpus_text(self)

    def _repr_html_(self) -> str:
        return gpus_html(self)

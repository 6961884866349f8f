"""What the speed validation covers, read from ``data/decode_benchmarks.json``, and the caveats outside it.

An option whose runtime, weight format, GPU architecture, memory type, batch or MoE placement no published
row checks carries a caveat (``HardwareOption.caveats``, printed under the options and in ``--json``): the
figure is then an extrapolation of the roofline, not a validated number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from ..accelerators import GPU
from ..accelerators import gpu as lookup

__all__ = ["Coverage", "coverage", "speed_caveats"]


def _memory_kind(g: GPU) -> str:
    kind = (g.memory_type or "").upper()
    return "HBM" if kind.startswith("HBM") else "unified" if g.vendor == "apple" else "GDDR"


@dataclass(frozen=True)
class Coverage:
    """Per runtime: the formats, GPU architectures, memory kinds and largest batch with a published row."""

    quants: dict[str, set[str]] = field(default_factory=dict)
    archs: dict[str, set[str]] = field(default_factory=dict)
    memory: dict[str, set[str]] = field(default_factory=dict)
    batch: dict[str, int] = field(default_factory=dict)
    moe_multi_gpu: dict[str, int] = field(default_factory=dict)


@lru_cache(maxsize=1)
def coverage() -> Coverage:
    """The validation set's coverage (one read of the packaged data file)."""
    text = resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text(encoding="utf-8")
    cov = Coverage()
    for row in json.loads(text)["rows"]:
        rt, g = str(row["runtime"]), lookup(str(row["gpu"]))
        cov.quants.setdefault(rt, set()).add(str(row["quant"]))
        cov.archs.setdefault(rt, set()).add(str(g.arch))
        cov.memory.setdefault(rt, set()).add(_memory_kind(g))
        cov.batch[rt] = max(cov.batch.get(rt, 0), int(row["batch"]))
        if int(row["count"]) > 1 and _is_moe(str(row["model"])):
            cov.moe_multi_gpu[rt] = cov.moe_multi_gpu.get(rt, 0) + 1
    return cov


def _is_moe(model: str) -> bool:
    from ..estimator import get_architecture

    return bool(get_architecture(model).is_moe)


def speed_caveats(g: GPU, devices: int, est: object, *, training: bool) -> tuple[str, ...]:
    """Why this option's speed lies outside what the published rows check (empty when it does not)."""
    if training:
        return ("training speed: no published row checks it (MFU 0.40 and the link factor are assumptions)",)
    cov = coverage()
    rt = str(getattr(est, "runtime", "default"))
    if rt not in cov.quants:
        return (f"speed: no published row for runtime {rt}",)
    out = []
    quant = str(getattr(getattr(est, "quant_spec", None), "name", getattr(est, "quant", "")))
    if quant and quant not in cov.quants[rt]:
        out.append(f"speed: {quant} weights on {rt} not checked by a published row")
    mem = _memory_kind(g)
    if g.arch not in cov.archs[rt]:
        out.append(f"speed: no published {rt} row on {'an' if g.arch[:1] in 'aeiou' else 'a'} {g.arch} GPU")
    elif mem not in cov.memory[rt]:
        out.append(f"speed: no published {rt} row on {mem} memory")
    batch = int(getattr(est, "batch", 1))
    if batch > cov.batch[rt]:
        out.append(f"speed: batch {batch} above the largest published {rt} batch ({cov.batch[rt]})")
    arch = getattr(est, "architecture", None)
    if devices > 1 and getattr(arch, "is_moe", False) and not getattr(est, "layer_split", False) \
            and not cov.moe_multi_gpu.get(rt):
        out.append(f"speed: MoE across GPUs on {rt} not checked by a published row")
    return tuple(out)

"""What the speed validation covers, read from ``data/decode_benchmarks.json``, and the caveats outside it.

An option whose runtime, weight format, GPU architecture, memory type, batch or MoE placement no published
row checks carries a caveat (``HardwareOption.caveats``, printed under the options and in ``--json``): the
figure is then an extrapolation of the roofline, not a validated number. A row marked ``"validates": false``
is one the model misses (beyond ±35 %) for want of a sourced term; it checks nothing, and the regime it
names carries its own caveat (``tests/hardware/test_coverage_caveats.py`` keeps the marks true).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from ..accelerators import GPU
from ..accelerators import gpu as lookup
from ..estimator._vllm import DEFAULT_VLLM_VERSION
from ._intervals import memory_kind as _memory_kind
from ._speed import triton_moe_of, triton_moe_path

__all__ = ["TRITON_FUSED_MOE", "Coverage", "coverage", "speed_caveats"]

#: Runtimes whose tensor-parallel experts run the Triton fused-MoE kernel (vLLM ``fused_moe.py``; SGLang's
#: ``fused_moe_triton``, adapted from it).
TRITON_FUSED_MOE = frozenset({"sglang", "vllm"})
#: The releases whose many-expert Triton fused MoE the rows check (``_speed.triton_moe_path``), as a plan's
#: caveat names them: the release input that models them.
OLD_TRITON_RELEASES = {"sglang": "SGLang 0.4.0-0.4.3 (sglang_version=0.4.3 models it)",
                       "vllm": "vLLM's V0 engine, 0.6-0.7 (vllm_version=v0 models it)"}


@dataclass(frozen=True)
class Coverage:
    """Per runtime: the formats, GPU architectures, memory kinds and largest batch with a published row."""

    quants: dict[str, set[str]] = field(default_factory=dict)
    archs: dict[str, set[str]] = field(default_factory=dict)
    memory: dict[str, set[str]] = field(default_factory=dict)
    batch: dict[str, int] = field(default_factory=dict)
    moe_multi_gpu: dict[str, int] = field(default_factory=dict)
    moe_experts: int = 0  # most routed experts of a validating multi-GPU MoE row under a TRITON_FUSED_MOE runtime
    moe_missed: tuple[str, ...] = ()  # those runtimes' multi-GPU MoE rows marked "validates": false, more experts
    moe_experts_triton: int = 0  # the same for rows whose release has the Triton fused-MoE term (_speed)


@lru_cache(maxsize=1)
def coverage() -> Coverage:
    """The validation set's coverage (one read of the packaged data file)."""
    text = resources.files("holysheep.hardware").joinpath("data/decode_benchmarks.json").read_text(encoding="utf-8")
    cov, experts, triton, missed = Coverage(), 0, 0, dict[str, int]()
    for row in json.loads(text)["rows"]:
        rt, g = str(row["runtime"]), lookup(str(row["gpu"]))
        moe_multi = int(row["count"]) > 1 and _is_moe(str(row["model"]))
        if moe_multi and rt in TRITON_FUSED_MOE:
            n = _experts(str(row["model"]))
            if not row.get("validates", True):
                missed[f"{row['model']} on {row['count']}x {row['gpu']} under {rt}"] = n
            elif triton_moe_path(rt, str(row.get("vllm_version", DEFAULT_VLLM_VERSION)), row.get("sglang_version"),
                                 str(row["quant"]), n):
                triton = max(triton, n)
            else:
                experts = max(experts, n)
        if not row.get("validates", True):
            continue
        cov.quants.setdefault(rt, set()).add(str(row["quant"]))
        cov.archs.setdefault(rt, set()).add(str(g.arch))
        cov.memory.setdefault(rt, set()).add(_memory_kind(g))
        cov.batch[rt] = max(cov.batch.get(rt, 0), int(row["batch"]))
        if moe_multi:
            cov.moe_multi_gpu[rt] = cov.moe_multi_gpu.get(rt, 0) + 1
    # the missed rows the many-experts caveat names: those beyond the validated expert count (a row missed for
    # another reason, GPTQ-Int4's MoE path, has its own caveat: its format is then not covered)
    return replace(cov, moe_experts=experts, moe_experts_triton=triton,
                   moe_missed=tuple(name for name, n in missed.items() if n > experts))


def _is_moe(model: str) -> bool:
    from ..estimator import get_architecture

    return bool(get_architecture(model).is_moe)


def _experts(model: str) -> int:
    from ..estimator import get_architecture

    return int(get_architecture(model).num_experts)


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
    if devices > 1 and getattr(arch, "is_moe", False) and not getattr(est, "layer_split", False):
        if not cov.moe_multi_gpu.get(rt):
            out.append(f"speed: MoE across GPUs on {rt} not checked by a published row")
        out.extend(_many_experts(rt, int(getattr(arch, "num_experts", 0)), devices, cov, term=triton_moe_of(est)))
    return tuple(out)


def _many_experts(rt: str, experts: int, devices: int, cov: Coverage, *, term: bool) -> list[str]:
    """The Triton fused-MoE regime the validation misses: more routed experts across GPUs than any row the
    model meets in this release (docs/hardware.md, "Limits"). ``term``: the release runs Triton's fused MoE
    with its fixed per-layer cost, which rows up to ``moe_experts_triton`` experts validate."""
    if rt not in TRITON_FUSED_MOE or experts <= (max(cov.moe_experts, cov.moe_experts_triton) if term
                                                 else cov.moe_experts):
        return []
    missed = f"; published {', '.join(cov.moe_missed)} decode far slower than modelled" if cov.moe_missed else ""
    older = (f"; {cov.moe_experts_triton}-expert FP8 rows check only {OLD_TRITON_RELEASES[rt]}"
             if cov.moe_experts_triton >= experts and not term else "")
    return [f"speed: MoE with {experts} experts across {devices} GPUs under {rt}'s Triton fused MoE is outside "
            f"what the validation covers (validated up to {cov.moe_experts} experts{missed}{older})"]

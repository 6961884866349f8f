"""Leave-one-source-out cross-validation of the decode speed model over hardware/data/decode_benchmarks.json.

The calibration procedure refits five scale factors on the rows of every other publication and scores the
held-out one: ``bw`` multiplies every bandwidth efficiency (capped at 1), and one factor per runtime
(vLLM, SGLang, transformers, llama.cpp) multiplies its fixed costs (``_overheads.runtime_cost``). Each
factor is chosen from ``SCALES`` by coordinate descent on the sum of absolute log errors (two sweeps); a
runtime with no row left in the training sources keeps the shipped constants (factor 1). The Triton
fused-MoE cost per MoE layer (``_overheads.TRITON_MOE_LAYER_S``, the one constant fitted to rows) is refitted
too, from ``TRITON_MOE_GRID`` on the training rows in its regime only (first in each sweep; none left: the
shipped value), and the factors on the rows outside it, so the two never trade on the same rows.
"In-sample" fits the same factors and cost on all rows and scores all rows.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Any
from unittest import mock

from holysheep.accelerators import GPU, gpu
from holysheep.estimator import estimate_inference_memory
from holysheep.hardware import _roofline
from holysheep.hardware._overheads import TRITON_MOE_LAYER_S, RuntimeCost
from holysheep.hardware._picker import decode_inputs
from holysheep.hardware._roofline import DEFAULT_EFFICIENCIES, decode_tokens_per_s

from .test_speed_validation import ROWS

SCALES = (0.5, 0.71, 1.0, 1.41, 2.0)
RUNTIMES = ("vllm", "sglang", "hf", "llama.cpp")
KEYS = ("triton_moe", "bw", *RUNTIMES)  # the MoE cost first: the fit does not start from its shipped value
#: Candidate values of the Triton fused-MoE cost per MoE layer (``_overheads.TRITON_MOE_LAYER_S``): 0 to 1 ms.
TRITON_MOE_GRID = tuple(i * 10e-6 for i in range(101))


def source_group(url: str) -> str:
    """One publication: a GitHub repository, or its numbered issue / pull request / discussion, or a site."""
    m = re.match(r"https://github\.com/([^/]+/[^/#]+)(?:/(?:issues|pull|discussions)/(\d+))?", url)
    if m:
        return m.group(1) + (f"#{m.group(2)}" if m.group(2) else "")
    return url.split("/")[2]


@dataclass(frozen=True)
class Case:
    row: dict[str, Any]
    gpu: GPU
    inputs: dict[str, Any]

    @property
    def group(self) -> str:
        return source_group(str(self.row["source"]))

    @property
    def triton_moe(self) -> bool:
        """In the regime of the Triton fused-MoE term: its constant moves this row."""
        return bool(self.inputs.get("triton_moe")) and int(self.row["count"]) > 1


@lru_cache(maxsize=1)
def cases() -> tuple[Case, ...]:
    out = []
    for r in ROWS:
        est = estimate_inference_memory(r["model"], r["quant"], r["context"], r["batch"], runtime=r["runtime"],
                                        vllm_version=r.get("vllm_version", "v1"),
                                        sglang_version=r.get("sglang_version"), kv_dtype=r.get("kv_dtype"))
        out.append(Case(r, gpu(r["gpu"]), decode_inputs(est)))
    return tuple(out)



@contextmanager
def _scaled_costs(theta: dict[str, float]) -> Iterator[None]:
    real = _roofline.runtime_cost

    def scaled(runtime: str, vendor: str, **options: bool) -> RuntimeCost:
        cost, k = real(runtime, vendor, **options), theta.get(runtime, 1.0)
        return RuntimeCost(*(getattr(cost, f.name) * k for f in fields(RuntimeCost)))

    with (mock.patch.object(_roofline, "runtime_cost", scaled),
          mock.patch.object(_roofline, "TRITON_MOE_LAYER_S", theta.get("triton_moe", TRITON_MOE_LAYER_S))):
        yield


def _eff(theta: dict[str, float]) -> Any:
    k = theta.get("bw", 1.0)
    bw = {f.name: min(1.0, getattr(DEFAULT_EFFICIENCIES, f.name) * k)
          for f in fields(DEFAULT_EFFICIENCIES) if f.name.startswith("bandwidth")}
    return replace(DEFAULT_EFFICIENCIES, **bw)


def log_errors(theta: dict[str, float], subset: tuple[Case, ...]) -> list[float]:
    """log(modelled / published) for each case under the scale factors ``theta``."""
    eff = _eff(theta)
    with _scaled_costs(theta):
        return [math.log(decode_tokens_per_s(c.gpu, int(c.row["count"]), batch=int(c.row["batch"]), eff=eff,
                                             **c.inputs) / float(c.row["tokens_per_s"])) for c in subset]


def fit(train: tuple[Case, ...]) -> dict[str, float]:
    """Scale factors, and the Triton fused-MoE cost per layer, minimising the summed absolute log error on
    ``train``. The MoE cost is read from the rows in its regime only (no such row: the shipped constant)."""
    theta = {**dict.fromkeys(KEYS, 1.0), "triton_moe": TRITON_MOE_LAYER_S}
    regime = tuple(c for c in train if c.triton_moe)
    rest = tuple(c for c in train if not c.triton_moe)
    present = {str(c.row["runtime"]) for c in rest}
    keys = [k for k in KEYS if k == "bw" or k in present or (k == "triton_moe" and regime)]
    for _ in range(2):
        for key in keys:
            if key == "triton_moe":
                theta[key] = min(TRITON_MOE_GRID, key=lambda v: (
                    sum(abs(e) for e in log_errors({**theta, key: v}, regime)), v))
                continue
            theta[key] = min(SCALES, key=lambda v: (sum(abs(e) for e in log_errors({**theta, key: v}, rest)),
                                                     abs(math.log(v))))
    return theta


@dataclass(frozen=True)
class Score:
    rows: int
    within: float  # share of rows within +-35 %
    median: float  # median absolute relative error

    @staticmethod
    def of(logs: list[float]) -> Score:
        rel = [abs(math.exp(e) - 1) for e in logs]
        return Score(len(rel), sum(r <= 0.35 for r in rel) / len(rel), statistics.median(rel))


@lru_cache(maxsize=1)
def held_out_errors() -> tuple[float, ...]:
    """Each case's log(modelled / published) under the factors fitted without its publication (``cases()``
    order)."""
    every = cases()
    by_case: dict[int, float] = {}
    for g in sorted({c.group for c in every}):
        theta = fit(tuple(c for c in every if c.group != g))
        mine = [i for i, c in enumerate(every) if c.group == g]
        by_case.update(zip(mine, log_errors(theta, tuple(every[i] for i in mine)), strict=True))
    return tuple(by_case[i] for i in range(len(every)))


@lru_cache(maxsize=1)
def leave_one_source_out() -> tuple[dict[str, Score], dict[str, Score], Score, Score]:
    """(held-out score per source, in-sample score per source, held-out overall, in-sample overall)."""
    every = cases()
    groups = sorted({c.group for c in every})
    held: dict[str, list[float]] = {g: [] for g in groups}
    for c, e in zip(every, held_out_errors(), strict=True):
        held[c.group].append(e)
    theta_all = fit(every)
    inside_all = log_errors(theta_all, every)
    inside: dict[str, list[float]] = {g: [] for g in groups}
    for c, e in zip(every, inside_all, strict=True):
        inside[c.group].append(e)
    return ({g: Score.of(v) for g, v in held.items()}, {g: Score.of(v) for g, v in inside.items()},
            Score.of([e for v in held.values() for e in v]), Score.of(inside_all))

"""Shared units, runtime constants, argument checks and GPU lookup."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .._exceptions import InvalidRequestError

GB = 1_000_000_000
GIB = 1 << 30


class MemoryTotals:
    """Per-GPU and all-GPU totals derived from ``breakdown`` (GB per GPU) and the number of GPUs."""

    breakdown: dict[str, float]

    @property
    def gpu_count(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def per_gpu_gb(self) -> float:
        """GB one GPU needs (the sum of ``breakdown``)."""
        return sum(self.breakdown.values())

    @property
    def per_gpu_gib(self) -> float:
        return self.per_gpu_gb * GB / GIB

    @property
    def total_gb(self) -> float:
        """GB across all the GPUs (equals ``per_gpu_gb`` on one GPU)."""
        return self.per_gpu_gb * self.gpu_count

    @property
    def total_gib(self) -> float:
        return self.total_gb * GB / GIB
MIB = 1 << 20


@dataclass(frozen=True)
class MemoryCheck:
    """One runtime's memory rule applied once to one GPU: ``need_gb <= limit_gb`` (GB per GPU).

    ``limit_gb`` is the share of the GPU the runtime lets the request use (vLLM: total x
    ``gpu_memory_utilization``; SGLang: total x ``mem_fraction_static``; others: all of it). ``rule``
    says which rule applied.
    """

    fits: bool
    need_gb: float
    limit_gb: float
    gpu_memory_gb: float
    rule: str
    warnings: tuple[str, ...] = ()
    """Why the figures may be off (e.g. the driver's capacity used where the runtime sizes from CUDA's)."""

#: CUDA context of a PyTorch process (lazy module loading, CUDA 12): typically 300-600 MiB on
#: A100/H100; plus the cuBLAS workspace (PyTorch default, 32 MiB on Hopper). Counted as "overhead".
CUDA_CONTEXT_BYTES = 512 * MIB
CUBLAS_WORKSPACE_BYTES = 32 * MIB
RUNTIME_OVERHEAD_BYTES = CUDA_CONTEXT_BYTES + CUBLAS_WORKSPACE_BYTES

#: Runtimes without a utilization cap (default, transformers, llama.cpp, MLX) keep this much of a GPU
#: free: PyTorch's caching allocator fragments, and NCCL / CUDA-graph buffers are not in the breakdown.
#: The larger of 1 GB and 5 % (the same reserve as training plans). GPU capacities are device bytes.
RESERVE_MIN_GB = 1.0
RESERVE_FRACTION = 0.05


def check_int(value: object, field: str, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer within range, else raise InvalidRequestError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"{field} must be an integer, got {value!r}", field=field, reason="not an int")
    if value < minimum or (maximum is not None and value > maximum):
        rng = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise InvalidRequestError(f"{field} must be {rng}, got {value}", field=field, reason="out of range")
    return value


def check_choice(value: object, field: str, choices: dict[str, str]) -> str:
    """Map ``value`` (case-insensitive, aliases allowed) to a canonical choice or raise."""
    key = str(value).strip().lower()
    if key not in choices:
        opts = sorted(set(choices.values()))
        raise InvalidRequestError(
            f"unknown {field} {value!r}; use one of {', '.join(opts)}", field=field, reason=f"unknown {field}"
        )
    return choices[key]


CUDA_TOTAL_RUNTIMES = {"vllm": "vLLM", "sglang": "SGLang"}
"""Runtimes whose budget is a fraction of the total CUDA reports (``torch.cuda.mem_get_info``), not the driver's."""


def cuda_total_warning(runtime: str, names: str) -> str:
    """The warning for ``runtime`` sized from the driver's figure of ``names`` (CUDA's total not in the table)."""
    return (f"{CUDA_TOTAL_RUNTIMES.get(runtime, runtime)} sizes its memory budget from CUDA's total "
            f"(torch.cuda.mem_get_info), which the GPU table does not have for {names}: the driver's figure was "
            "used, so the budget may be 0.5-1 GiB too generous. To size it exactly, give the GPU as CUDA's "
            "total in GB, or register the row with cuda_total_gib")


_WARNED: set[str] = set()
"""Warning texts already raised in this process: each planner warning is raised once per run."""


def warn_once(text: str, stacklevel: int = 2) -> None:
    """Raise ``text`` as a ``UserWarning`` the first time this process sees it; later calls are silent."""
    if text in _WARNED:
        return
    _WARNED.add(text)
    warnings.warn(text, UserWarning, stacklevel=stacklevel + 1)


def runtime_memory_gb(gpu: object, runtime: str) -> tuple[float, str, tuple[str, ...]]:
    """GB the ``runtime`` sizes itself from, a label and warnings, for a GPU given as in `gpu_memory_gb`.

    vLLM and SGLang take a fraction of CUDA's total: a row's ``cuda_total_gib`` (x 2^30 / 1e9) where it
    has one, else its driver figure with a warning. Numbers are used as passed; other runtimes get
    ``memory_gb``.
    """
    if isinstance(gpu, str):
        from ..accelerators import gpu as lookup

        gpu = lookup(gpu)
    mem, label = gpu_memory_gb(gpu)
    if runtime not in CUDA_TOTAL_RUNTIMES or isinstance(gpu, (int, float)):
        return mem, label, ()
    cuda = getattr(gpu, "cuda_total_gib", None)
    if isinstance(cuda, (int, float)) and not isinstance(cuda, bool) and cuda > 0:
        return cuda * GIB / GB, label, ()
    return mem, label, (cuda_total_warning(runtime, label),)


def gpu_memory_gb(gpu: object) -> tuple[float, str]:
    """Usable memory in GB (10^9 bytes) and a label for a GPU given as a name, an object or a number.

    Names are looked up in the accelerator table (``holysheep.accelerators``); objects need a
    ``memory_gb`` attribute; numbers are taken as GB.
    """
    if isinstance(gpu, bool):
        raise InvalidRequestError("gpu must be a name, a GPU object or a memory size in GB", field="gpu")
    if isinstance(gpu, (int, float)):
        if gpu <= 0:
            raise InvalidRequestError(f"gpu memory must be > 0 GB, got {gpu}", field="gpu")
        return float(gpu), f"{gpu:g} GB GPU"
    if isinstance(gpu, str):
        from ..accelerators import gpu as lookup

        gpu = lookup(gpu)
    mem = getattr(gpu, "memory_gb", None)
    if not isinstance(mem, (int, float)) or isinstance(mem, bool) or mem <= 0:
        raise InvalidRequestError("gpu object has no positive .memory_gb", field="gpu", reason="no memory_gb")
    return float(mem), str(getattr(gpu, "name", None) or getattr(gpu, "id", None) or "GPU")

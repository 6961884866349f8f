"""The accelerator row types: ``GPU`` and ``PriceQuote``, and the precision/price vocabularies.

The rows ship as package data (``holysheep/accelerators/data/gpus.json``). Every compute figure is a *dense* tensor peak
(no 2:4 structured sparsity) at FP32 accumulate; ``GPU.sparse_tflops`` derives the sparse figure as
2x dense on parts that support it. Units: GB = 1e9 bytes, GB/s = 1e9 B/s, TFLOPS/TOPS = 1e12/s. ``memory_gb`` is the
capacity the device reports, in bytes / 1e9 (a 24 GiB card is 25.77 GB), never a GiB figure read as GB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAST_LINK_GB_S", "GPU", "NATIVE_KEYS", "PRECISIONS", "PRICE_KINDS", "PriceQuote"]

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
"""Keys of ``GPU.dense_tflops``."""
NATIVE_KEYS: tuple[str, ...] = ("bf16", "fp8", "fp4", "int8", "int4")
"""Keys of ``GPU.native`` (a tensor-core / matrix-engine path exists for that precision)."""
PRICE_KINDS: tuple[str, ...] = ("list", "marketplace", "reserved")
"""``list``: provider's published on-demand rate; ``marketplace``: host-set street price;
``reserved``: published rate for prepaid capacity (e.g. AWS Capacity Blocks)."""

FAST_LINK_GB_S = 300.0
"""A GPU-to-GPU link at or above this bandwidth counts as a scale-up fabric (NVLink, Infinity Fabric,
Gaudi RoCE); below it (PCIe-only cards, 2-card bridges) tensor parallelism is penalised."""


@dataclass(frozen=True)
class PriceQuote:
    """One dated cloud price for a single GPU-hour (USD)."""

    provider: str
    usd_per_hour: float
    kind: str
    as_of: str
    source: str
    usd_per_hour_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the quote."""
        d: dict[str, object] = {"provider": self.provider, "usd_per_hour": self.usd_per_hour}
        if self.usd_per_hour_high is not None:
            d["usd_per_hour_high"] = self.usd_per_hour_high
        d.update(kind=self.kind, as_of=self.as_of, source=self.source)
        return d


@dataclass(frozen=True)
class GPU:
    """One accelerator row. ``dense_tflops[p]`` is ``None`` where the precision has no published peak."""

    id: str
    name: str
    vendor: str
    memory_gb: float
    bandwidth_gb_s: float
    dense_tflops: Mapping[str, float | None] = field(hash=False)
    supports_sparsity: bool
    tdp_w: float | None
    prices: tuple[PriceQuote, ...]
    source: str
    as_of: str
    native: Mapping[str, bool] = field(hash=False, default_factory=dict)
    form_factor: str = ""
    arch: str = ""
    compute_capability: str | None = None
    launch_year: int | None = None
    memory_type: str = ""
    interconnect: str = ""
    gpu_link_gb_s: float | None = None
    pcie_gen: int | None = None
    devices_per_package: int = 1
    aliases: tuple[str, ...] = ()
    notes: str = ""
    unified_memory_gb: float | None = None
    """Installed RAM shared by CPU and GPU (unified-memory machines); ``memory_gb`` is the GPU's usable share."""
    memory_gib: float | None = None
    """The datasheet's capacity in binary gigabytes (a "24 GB" card holds 24 GiB); ``memory_gb`` is the
    capacity in bytes / 1e9 (25.77 for 24 GiB), or what the driver reports where ``reported_mib`` is set."""
    reported_mib: float | None = None
    """MiB the driver reports (``nvidia-smi``), where known; ECC reserves part of some GDDR parts."""
    cuda_total_gib: float | None = None
    """GiB CUDA itself reports as the device's total (``cudaMemGetInfo``, ``torch.cuda.mem_get_info()``, the
    "total capacity" of PyTorch's out-of-memory message), where a public report gives it: 0.5-1 GiB below
    the driver's figure. vLLM and SGLang size their budgets from it; ``memory_gb`` stays the driver's figure."""
    cuda_total_source: str = ""
    """Where ``cuda_total_gib`` was read (a public issue quoting the figure)."""
    sms: int | None = None
    """Streaming multiprocessors, where the part has fewer than its memory system is sized for (H20: 78);
    the decode roofline caps streaming reads at what that many SMs keep in flight."""

    @property
    def cuda_total_gb(self) -> float | None:
        """``cuda_total_gib`` in GB (10^9 bytes), or ``None`` where the row lacks it."""
        return None if self.cuda_total_gib is None else self.cuda_total_gib * (1 << 30) / 1e9

    def tflops(self, precision: str) -> float | None:
        """Dense peak for ``precision`` (one of ``PRECISIONS``), or ``None`` if not published."""
        return self.dense_tflops.get(precision)

    def sparse_tflops(self, precision: str) -> float | None:
        """Derived 2:4-sparse peak (2x dense) where the part supports sparsity, else ``None``."""
        dense = self.tflops(precision)
        if dense is None or not self.supports_sparsity:
            return None
        return 2 * dense

    def supports(self, precision: str) -> bool:
        """Whether the part has a native tensor path for ``precision`` (see ``NATIVE_KEYS``)."""
        return bool(self.native.get(precision, False))

    @property
    def memory_per_device_gb(self) -> float:
        """Memory of one addressable device (an MI250X module is two 64 GB devices)."""
        return self.memory_gb / self.devices_per_package

    @property
    def has_fast_interconnect(self) -> bool:
        """True when GPUs are linked by a scale-up fabric of at least ``FAST_LINK_GB_S``."""
        return self.gpu_link_gb_s is not None and self.gpu_link_gb_s >= FAST_LINK_GB_S

    @property
    def price_per_hour(self) -> float | None:
        """Representative USD per GPU-hour: the lowest *list* quote, else the lowest quote of any kind."""
        if not self.prices:
            return None
        listed = [p.usd_per_hour for p in self.prices if p.kind == "list"]
        return min(listed) if listed else min(p.usd_per_hour for p in self.prices)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the row (the same shape as ``accelerators/data/gpus.json``)."""
        return {
            "id": self.id,
            "name": self.name,
            "vendor": self.vendor,
            "form_factor": self.form_factor,
            "arch": self.arch,
            "compute_capability": self.compute_capability,
            "launch_year": self.launch_year,
            "memory_gb": self.memory_gb,
            "memory_gib": self.memory_gib,
            "reported_mib": self.reported_mib,
            "cuda_total_gib": self.cuda_total_gib,
            "cuda_total_source": self.cuda_total_source,
            "memory_type": self.memory_type,
            "unified_memory_gb": self.unified_memory_gb,
            "bandwidth_gb_s": self.bandwidth_gb_s,
            "tdp_w": self.tdp_w,
            "dense_tflops": {p: self.dense_tflops.get(p) for p in PRECISIONS},
            "supports_sparsity": self.supports_sparsity,
            "native": {k: bool(self.native.get(k, False)) for k in NATIVE_KEYS},
            "interconnect": self.interconnect,
            "gpu_link_gb_s": self.gpu_link_gb_s,
            "pcie_gen": self.pcie_gen,
            "devices_per_package": self.devices_per_package,
            "aliases": list(self.aliases),
            "prices": [p.to_dict() for p in self.prices],
            "price_per_hour": self.price_per_hour,
            "source": self.source,
            "as_of": self.as_of,
            "notes": self.notes,
        }

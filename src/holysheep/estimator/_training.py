"""Training memory: model states under ZeRO 0-3 (with offload), LoRA/QLoRA, and activations."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import InvalidRequestError
from ._activations import activation_bytes
from ._architecture import Architecture
from ._catalog import ModelLike, resolve_model
from ._common import GB, RUNTIME_OVERHEAD_BYTES, MemoryCheck, MemoryTotals, check_choice, check_int, gpu_memory_gb
from ._fit_hint import first_fit
from ._quant import quant_spec, weight_bytes
from ._render import render_html, render_text
from ._states import adafactor_bytes, lora_params, model_state_bytes

__all__ = ["TrainingEstimate", "estimate_training_memory", "lora_params", "model_state_bytes", "training_reserve_gb"]


def training_reserve_gb(memory_gb: float) -> float:
    """GB a training fit leaves free on a GPU of ``memory_gb`` for the allocator: ``max(1 GB, 5 %)``."""
    return max(1.0, 0.05 * memory_gb)

_PRECISION = {
    "bf16-mixed": "mixed",
    "fp16-mixed": "mixed",
    "16-mixed": "mixed",
    "mixed": "mixed",
    "bf16": "mixed",
    "fp16": "mixed",
    "amp": "mixed",
    "bf16-true": "true16",
    "bf16-pure": "true16",
    "fp16-true": "true16",
    "pure-bf16": "true16",
    "fp32": "fp32",
    "32-true": "fp32",
    "32": "fp32",
    "float32": "fp32",
}
_OPT = {
    "adamw": "adamw",
    "adam": "adamw",
    "adamw-8bit": "adamw-8bit",
    "adamw8bit": "adamw-8bit",
    "adam-8bit": "adamw-8bit",
    "paged-adamw-8bit": "paged-adamw-8bit",
    "paged_adamw_8bit": "paged-adamw-8bit",
    "paged-adamw": "paged-adamw",
    "paged-adamw-32bit": "paged-adamw",
    "paged_adamw_32bit": "paged-adamw",
    "sgd": "sgd",
    "sgd-momentum": "sgd",
    "sgd-no-momentum": "sgd-no-momentum",
    "adafactor": "adafactor",
}
_METHOD = {"full": "full", "lora": "lora", "qlora": "qlora"}
_CKPT = {"none": "none", "false": "none", "selective": "selective", "full": "full", "true": "full"}
_ACCOUNTING = {"deepspeed": "deepspeed", "zero-paper": "zero-paper", "paper": "zero-paper"}


@dataclass(frozen=True, eq=False)
class TrainingEstimate(MemoryTotals):
    """Memory to train a model; ``breakdown`` is GB per GPU. Build with estimate_training_memory."""

    model_name: str
    architecture: Architecture
    precision: str
    optimizer: str
    method: str
    seq_len: int
    micro_batch: int
    gradient_checkpointing: str
    flash_attention: bool
    zero_stage: int
    num_gpus: int
    offload_optimizer: bool
    offload_params: bool
    lora_rank: int
    accounting: str
    trainable_params: int
    breakdown: dict[str, float]
    cpu_offload_gb: float
    details: dict[str, float]
    assumptions: list[str]
    warnings: list[str]
    _rebuild: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def gpu_count(self) -> int:
        return self.num_gpus

    def with_num_gpus(self, n: int) -> TrainingEstimate:
        """The same run over ``n`` data-parallel GPUs."""
        return _build(**{**self._rebuild, "num_gpus": check_int(n, "num_gpus", maximum=1 << 20)})

    def with_options(self, **changes: object) -> TrainingEstimate:
        """The same run with some switches changed: ``gradient_checkpointing``, ``zero_stage``,
        ``offload_optimizer``, ``offload_params``, ``seq_len``, ``micro_batch`` or ``num_gpus``."""
        keys = {"gradient_checkpointing": "ckpt", "zero_stage": "zero_stage", "offload_optimizer": "offload_optimizer",
                "offload_params": "offload_params", "seq_len": "seq_len", "micro_batch": "micro_batch",
                "num_gpus": "num_gpus"}
        bad = set(changes) - set(keys)
        if bad:
            raise InvalidRequestError(f"with_options takes {', '.join(sorted(keys))}, not {', '.join(sorted(bad))}",
                                      field=sorted(bad)[0])
        if "gradient_checkpointing" in changes:
            changes["gradient_checkpointing"] = check_choice(
                str(changes["gradient_checkpointing"]).lower(), "gradient_checkpointing", _CKPT)
        return _build(**{**self._rebuild, **{keys[k]: v for k, v in changes.items()}})

    def memory_check(self, gpu: object, count: int | None = None) -> MemoryCheck:
        """The per-GPU need at ``count`` GPUs (default ``num_gpus``) against one GPU's memory less a reserve.

        The CUDA context and workspace are already in ``overhead``; the allocator's fragmentation is not, so
        ``max(1 GB, 5 %)`` of the GPU stays free (a 48 GB card holds 45.6 GB of training state).
        ``pick_hardware`` and ``holysheep plan`` use this, so they agree with `fits`.
        """
        est = self if count is None or count == self.num_gpus else self.with_num_gpus(count)
        mem = gpu_memory_gb(gpu)[0]
        limit = mem - training_reserve_gb(mem)
        return MemoryCheck(est.per_gpu_gb <= limit, est.per_gpu_gb, limit, mem,
                           "training: the GPU's memory less a reserve of max(1 GB, 5 %) for the allocator")

    def fit_hint(self, gpu: object, count: int | None = None) -> str | None:
        """The first switch that makes this run fit ``count`` GPUs of this kind, as text, or None.

        Tried in order: full gradient checkpointing, ZeRO-3 (more than one GPU), optimizer offload (ZeRO-2 on
        one GPU), a sequence down to a quarter as long, parameter offload (ZeRO-3, slow), any shorter sequence.
        """
        return first_fit(self, gpu, self.num_gpus if count is None else count)

    def fits(self, gpu: object, count: int | None = None) -> bool:
        """Whether ``count`` GPUs (default ``num_gpus``) of this kind hold the run."""
        return self.memory_check(gpu, count).fits

    def __str__(self) -> str:
        title = (
            f"{self.model_name} training ({self.method}, {self.precision}, {self.optimizer}), seq "
            f"{self.seq_len:,} x micro-batch {self.micro_batch}, ZeRO-{self.zero_stage} on {self.num_gpus} GPU(s)"
        )
        extra = [f"trainable parameters: {self.trainable_params:,}"]
        if self.cpu_offload_gb:
            extra.append(f"CPU memory for offloaded states: {self.cpu_offload_gb:.2f} GB (all ranks)")
        return render_text(title, self.breakdown, self.num_gpus, self.assumptions, self.warnings, extra)

    def _repr_html_(self) -> str:
        title = f"{self.model_name}: {self.method} training, ZeRO-{self.zero_stage} x {self.num_gpus}"
        return render_html(title, self.breakdown, self.num_gpus, self.assumptions, self.warnings)


def _build(
    *,
    arch: Architecture,
    name: str,
    base_notes: list[str],
    approximate: bool,
    precision: str,
    precision_label: str,
    optimizer: str,
    method: str,
    seq_len: int,
    micro_batch: int,
    ckpt: str,
    flash_attention: bool,
    zero_stage: int,
    num_gpus: int,
    offload_optimizer: bool,
    offload_params: bool,
    lora_rank: int,
    accounting: str,
    emit_warning: bool = True,
) -> TrainingEstimate:
    rebuild = {k: v for k, v in locals().items() if k != "emit_warning"}
    rebuild["emit_warning"] = False
    notes, warns = list(base_notes), list(arch.assumptions)
    paged = optimizer.startswith("paged-")
    optimizer = optimizer.removeprefix("paged-")
    P = arch.num_params
    if method == "full":
        trainable = P
        opt_total = adafactor_bytes(arch) if optimizer == "adafactor" else None
        states, cpu = model_state_bytes(
            params=P,
            precision=precision,
            optimizer=optimizer,
            zero_stage=zero_stage,
            num_gpus=num_gpus,
            offload_optimizer=offload_optimizer,
            offload_params=offload_params,
            largest_layer_params=arch.largest_layer_params,
            accounting=accounting,
            optimizer_bytes_total=opt_total,
        )
        if precision == "mixed":
            notes.append("mixed precision: 16-bit weights and gradients, fp32 master weights and optimizer states")
    else:
        trainable = lora_params(arch, lora_rank)
        adapter_precision = "fp32" if precision in ("mixed", "fp32") else "true16"
        states, cpu = model_state_bytes(
            params=trainable,
            precision=adapter_precision,
            optimizer=optimizer,
            zero_stage=zero_stage,
            num_gpus=num_gpus,
            offload_optimizer=offload_optimizer,
            accounting="zero-paper",
        )
        base_spec = quant_spec("nf4" if method == "qlora" else "fp32" if precision == "fp32" else "bf16")
        frozen = weight_bytes(arch, base_spec) / (num_gpus if zero_stage == 3 else 1)
        if offload_params:
            cpu += frozen * num_gpus
            frozen = 0
        states["weights"] += frozen
        notes.append(
            f"{method}: frozen base in {base_spec.name}; rank-{lora_rank} adapters on all linear "
            f"layers ({trainable:,} params) kept in {adapter_precision} with their own optimizer states"
        )
    act, detail = activation_bytes(
        arch, seq_len, micro_batch, ckpt, flash_attention, act_bytes=4 if precision == "fp32" else 2
    )
    notes.append(
        f"activations (Korthikanti et al. 2022, arXiv:2205.05198, per layer from this architecture): "
        f"recompute={ckpt}, flash_attention={flash_attention}; logits {detail['logits_gb']:.2f} GB"
    )
    if accounting == "deepspeed" and zero_stage >= 1 and method == "full":
        notes.append(
            "DeepSpeed accounting: fp32 gradient partition counted"
            + ("; ZeRO-3 gathers 4 x largest layer" if zero_stage == 3 else "")
        )
    if optimizer == "adafactor":
        notes.append("Adafactor without momentum, factored fp32 second moments")
    if approximate:
        if emit_warning:
            warnings.warn(
                f"{name}: architecture assumed from a bare parameter count; the memory figure is approximate.",
                UserWarning,
                stacklevel=3,
            )
        warns.append("architecture assumed from a bare parameter count: approximate")
    if paged and states["optimizer"]:
        # bitsandbytes paged optimizers keep states in CUDA unified memory: under pressure they page out to CPU
        # while activations peak and page back for the step, so the GPU peak holds the larger of the two.
        resident = max(0.0, states["optimizer"] - act)
        cpu += states["optimizer"] - resident
        notes.append(
            f"paged {optimizer}: {states['optimizer'] / GB:.2f} GB of optimizer states in unified memory page out "
            "while activations peak (Dettmers et al. 2023, QLoRA, arXiv:2305.14314, 'Paged Optimizers')"
        )
        states["optimizer"] = resident
    breakdown = {k: v / GB for k, v in states.items()}
    breakdown["activations"] = act / GB
    breakdown["overhead"] = RUNTIME_OVERHEAD_BYTES / GB
    return TrainingEstimate(
        model_name=name,
        architecture=arch,
        precision=precision_label,
        optimizer=str(rebuild["optimizer"]),
        method=method,
        seq_len=seq_len,
        micro_batch=micro_batch,
        gradient_checkpointing=ckpt,
        flash_attention=flash_attention,
        zero_stage=zero_stage,
        num_gpus=num_gpus,
        offload_optimizer=offload_optimizer,
        offload_params=offload_params,
        lora_rank=lora_rank,
        accounting=accounting,
        trainable_params=trainable,
        breakdown=breakdown,
        cpu_offload_gb=cpu / GB,
        details=detail,
        assumptions=notes,
        warnings=warns,
        _rebuild=rebuild,
    )


def estimate_training_memory(
    model: ModelLike,
    precision: str = "bf16-mixed",
    optimizer: str | None = None,
    method: str = "full",
    seq_len: int = 4096,
    micro_batch: int = 1,
    gradient_checkpointing: str | bool | None = None,
    flash_attention: bool = True,
    zero_stage: int = 0,
    num_gpus: int = 1,
    offload_optimizer: bool = False,
    lora_rank: int = 16,
    *,
    offload_params: bool = False,
    accounting: str = "deepspeed",
) -> TrainingEstimate:
    """Estimate per-GPU memory to train ``model`` (full fine-tune, LoRA or QLoRA).

    ``precision``: ``bf16-mixed`` (also plain ``"bf16"``, as PyTorch Lightning reads it), ``bf16-true``
    (pure bf16, optimizer states in bf16) or ``fp32``. ``optimizer``: ``adamw``, ``adamw-8bit``, ``sgd``
    (momentum), ``sgd-no-momentum``, ``adafactor``, or bitsandbytes' ``paged-adamw`` / ``paged-adamw-8bit``
    (states page out to CPU while activations peak). Default: ``paged-adamw`` for QLoRA (as the QLoRA
    paper and its reference script train), ``adamw`` otherwise. ``gradient_checkpointing``: ``none``, ``selective``
    or ``full``; default ``full`` for QLoRA (as QLoRA recipes train), ``none`` otherwise. ``zero_stage`` 0-3
    shards states over ``num_gpus`` data-parallel GPUs;
    ``offload_optimizer`` (ZeRO >= 1) and ``offload_params`` (ZeRO-3) move states to CPU memory.
    """
    arch, name, notes, approximate = resolve_model(model)
    prec = check_choice(precision, "precision", _PRECISION)
    label = {"mixed": "bf16-mixed", "true16": "bf16-true", "fp32": "fp32"}[prec]
    if str(precision).lower() in ("bf16", "fp16"):
        notes.append(f"precision {precision!r} read as {precision}-mixed (fp32 master weights), as Lightning does")
    if str(precision).lower().startswith("fp16"):
        label = label.replace("bf16", "fp16")
    meth = check_choice(method, "method", _METHOD)
    opt = check_choice(optimizer or ("paged-adamw" if meth == "qlora" else "adamw"), "optimizer", _OPT)
    if gradient_checkpointing is None and meth == "qlora":
        gradient_checkpointing = "full"
        notes.append("QLoRA: gradient checkpointing on, as QLoRA recipes train (pass gradient_checkpointing='none' "
                     "to plan without)")
    ckpt = check_choice(str(gradient_checkpointing or "none").lower(), "gradient_checkpointing", _CKPT)
    acc = check_choice(accounting, "accounting", _ACCOUNTING)
    check_int(seq_len, "seq_len")
    check_int(micro_batch, "micro_batch")
    check_int(zero_stage, "zero_stage", minimum=0, maximum=3)
    check_int(num_gpus, "num_gpus", maximum=1 << 20)
    check_int(lora_rank, "lora_rank")
    if offload_optimizer and zero_stage == 0:
        raise InvalidRequestError(
            "offload_optimizer needs zero_stage >= 1 (DeepSpeed ZeRO-Offload); set zero_stage=1, 2 or 3",
            field="offload_optimizer",
            reason="needs ZeRO",
        )
    if offload_params and zero_stage != 3:
        raise InvalidRequestError(
            "offload_params needs zero_stage=3 (ZeRO-Infinity)", field="offload_params", reason="needs ZeRO-3"
        )
    if not isinstance(flash_attention, bool):
        raise InvalidRequestError("flash_attention must be True or False", field="flash_attention")
    return _build(
        arch=arch,
        name=name,
        base_notes=notes,
        approximate=approximate,
        precision=prec,
        precision_label=label,
        optimizer=opt,
        method=meth,
        seq_len=seq_len,
        micro_batch=micro_batch,
        ckpt=ckpt,
        flash_attention=flash_attention,
        zero_stage=zero_stage,
        num_gpus=num_gpus,
        offload_optimizer=offload_optimizer,
        offload_params=offload_params,
        lora_rank=lora_rank,
        accounting=acc,
    )

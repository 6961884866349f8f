"""The packaged model catalog, name resolution, and architectures assumed from a bare size."""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .._exceptions import InvalidRequestError, UnknownModelError
from ._architecture import Architecture

__all__ = [
    "CatalogEntry", "ModelLike", "catalog_entry", "get_architecture", "list_models", "resolve_model", "shipped_quant",
]

ModelLike = str | Path | Architecture | Mapping[str, Any] | int | float


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog row: the architecture, its source config URL and the published parameter count.

    ``reported_tolerance`` is how far (relative) the count may sit from a rounded ``reported`` figure, and
    ``reported_includes_mtp`` says that figure counts the multi-token-prediction modules too.
    ``active_convention`` says what the card's active figure leaves out (see `card_active_params`).

    ``quant`` is the weight format the published checkpoint ships in (``"mxfp4"`` for gpt-oss, ``"fp8"``
    for DeepSeek-V3/R1, otherwise ``"bf16"``); ``reported_active`` is the model card's active-parameter
    figure for MoE rows; ``note`` says what the row counts when it is not the whole checkpoint.
    """

    name: str
    family: str
    architecture: Architecture
    source: str
    as_of: str
    params: int | None
    reported: float | None
    params_source: str
    config: Mapping[str, object]
    aliases: tuple[str, ...]
    quant: str = "bf16"
    reported_active: float | None = None
    note: str = ""
    active_convention: str = "all"
    reported_tolerance: float | None = None
    reported_includes_mtp: bool = False

    @property
    def card_active_params(self) -> int:
        """Active parameters counted the way this model's card counts them (``active_convention``).

        ``"all"``: everything a token uses (``Architecture.num_active_params``); ``"no_input_embedding"``:
        without the input embedding table, a lookup (gpt-oss, Kimi-K2, MiniMax-M2); ``"no_embeddings"``:
        without the input table and the output head (GLM-4.5).
        """
        arch = self.architecture
        groups = arch.param_groups()
        drop = {"all": 0, "no_input_embedding": groups["embedding"],
                "no_embeddings": groups["embedding"] + groups["lm_head"]}[self.active_convention]
        return arch.num_active_params - drop


def _norm(name: str) -> str:
    s = name.strip().lower().split("/")[-1]
    s = re.sub(r"[\s_]+", "-", s)
    s = re.sub(r"-(instruct|chat|hf|it|base)$", "", s)
    return s


@functools.lru_cache(maxsize=1)
def _load() -> tuple[dict[str, CatalogEntry], dict[str, tuple[str, str]], tuple[str, ...]]:
    raw = json.loads(resources.files("holysheep.estimator").joinpath("data/models.json").read_text("utf-8"))
    entries: dict[str, CatalogEntry] = {}
    for row in raw["models"]:
        arch = Architecture.from_hf_config(row["config"], row["name"])
        entries[row["name"]] = CatalogEntry(
            name=row["name"],
            family=row["family"],
            architecture=arch,
            source=row["source"],
            as_of=row["as_of"],
            params=row.get("params"),
            reported=row.get("reported"),
            params_source=row.get("params_source", ""),
            config=row["config"],
            aliases=tuple(row["aliases"]),
            quant=row.get("quant", "bf16"),
            reported_active=row.get("reported_active"),
            note=row.get("note", ""),
            active_convention=row.get("active_convention", "all"),
            reported_tolerance=row.get("reported_tolerance"),
            reported_includes_mtp=bool(row.get("reported_includes_mtp", False)),
        )
    served = {k: (v["model"], v.get("note", "")) for k, v in raw.get("served_aliases", {}).items()}
    return entries, served, tuple(raw.get("closed_models", ()))


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    entries, served, _ = _load()
    idx: dict[str, str] = {}
    for e in entries.values():
        for n in (e.name, *e.aliases):
            idx[_norm(n)] = e.name
    for alias, (target, _note) in served.items():
        idx[_norm(alias)] = target
    return idx


def list_models() -> list[str]:
    """Names of the catalog models, in catalog order."""
    return list(_load()[0])


def catalog_entry(name: str) -> CatalogEntry:
    """The catalog row for a model name or alias (case-insensitive; ``org/`` prefix and ``-instruct`` ignored)."""
    entries, _served, closed = _load()
    key = _norm(name)
    target = _index().get(key)
    if target is not None:
        return entries[target]
    if key in closed:
        raise UnknownModelError(
            f"{name!r} is a closed model with no published architecture, so its memory cannot be estimated; "
            f"pick an open model from list_models()",
            field="model",
            reason="closed model",
        )
    near = difflib.get_close_matches(key, list(_index()), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(_index()[n]) for n in near)}?" if near else ""
    raise UnknownModelError(
        f"unknown model {name!r}{hint} Use list_models(), an Architecture, a config.json path or dict, "
        f"or a parameter count in billions",
        field="model",
        reason="unknown model",
    )


def get_architecture(name: str) -> Architecture:
    """The `Architecture` of a catalog model; raises UnknownModelError with the nearest names."""
    return catalog_entry(name).architecture


def shipped_quant(model: ModelLike) -> tuple[Any, str | None]:
    """``(format, warning)``: the weight format the checkpoint ships in, or None when unknown.

    A catalog name gives its row's ``quant`` (``"fp8"``, ``"mxfp4"``, ``"bf16"``). A ``config.json`` (path or
    dict) gives its ``quantization_config`` as a ``QuantSpec`` (``_checkpoint``: fp8, fbgemm_fp8,
    compressed-tensors W8A8/W4A16/FP8/NVFP4, ModelOpt FP8/NVFP4, mxfp4, 4-bit AWQ/GPTQ, bitsandbytes), with
    the modules its ignore list keeps unquantized; another ``quant_method`` gives a warning instead (the
    weights are then planned in bf16). An Architecture or a bare size gives ``(None, None)``.
    """
    cfg: object = None
    if isinstance(model, Mapping):
        cfg = model
    elif isinstance(model, Path) or (isinstance(model, str) and (model.endswith(".json") or Path(model).is_dir())):
        p = Path(model) / "config.json" if Path(model).is_dir() else Path(model)
        try:
            cfg = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, None
    elif isinstance(model, str):
        try:
            return catalog_entry(model).quant, None
        except UnknownModelError:
            return None, None
    qc = cfg.get("quantization_config") if isinstance(cfg, Mapping) else None
    if not isinstance(qc, Mapping):
        return None, None
    from ._checkpoint import read_quantization_config
    from ._quant import quant_spec

    name, patterns, syntax, warning = read_quantization_config(qc)
    if name is None:
        return None, warning
    spec = quant_spec(name)
    return (replace(spec, unquantized=patterns, unquantized_syntax=syntax) if patterns else spec), None


def served_alias_note(name: str) -> str | None:
    """The note recorded for a HolySheep served name mapped onto an open architecture, if any."""
    return {_norm(k): v[1] for k, v in _load()[1].items()}.get(_norm(name))


def _assumed(billions: float) -> tuple[Architecture, str]:
    """A Llama-family shape for a bare size: the nearest catalog Llama, resized by layer count if > 10% off."""
    if not math.isfinite(billions) or billions <= 0:
        raise InvalidRequestError(
            f"a parameter count must be a positive number of billions, got {billions!r}",
            field="model",
        )
    target = billions * 1e9
    llamas = [e.architecture for e in _load()[0].values() if e.family == "llama"]
    base = min(llamas, key=lambda a: abs(math.log(a.num_params / target)))
    if abs(base.num_params / target - 1) <= 0.10:
        return base, f"{billions:g}B read as {base.name} ({base.num_params / 1e9:.2f}B params, same shape)"
    one = replace(base, num_hidden_layers=1)
    per_layer = replace(base, num_hidden_layers=2).num_params - one.num_params
    fixed = one.num_params - per_layer
    layers = max(1, round((target - fixed) / per_layer))
    arch = replace(base, num_hidden_layers=layers, name=f"assumed-{billions:g}B (llama-like)")
    return arch, (
        f"{billions:g}B read as a Llama-like model shaped like {base.name} with {layers} layers "
        f"({arch.num_params / 1e9:.2f}B params)"
    )


def resolve_model(model: ModelLike) -> tuple[Architecture, str, list[str], bool]:
    """Turn any accepted model form into ``(architecture, display name, assumptions, approximate)``."""
    if isinstance(model, Architecture):
        return model, model.name, [], False
    if isinstance(model, bool):
        raise InvalidRequestError("model must be a name, Architecture, config or size, not a bool", field="model")
    if isinstance(model, (int, float)):
        arch, note = _assumed(float(model))
        notes = [note, "architecture assumed from a bare parameter count: figures are approximate"]
        return arch, arch.name, notes, True
    if isinstance(model, Mapping):
        arch = Architecture.from_hf_config(model)
        return (
            arch,
            arch.name,
            [f"architecture read from a config dict (model_type={arch.model_type})"],
            False,
        )
    if isinstance(model, Path) or (isinstance(model, str) and (model.endswith(".json") or Path(model).is_dir())):
        arch = Architecture.from_hf_config(model)
        return arch, arch.name, [f"architecture read from {str(model)!r}"], False
    if isinstance(model, str):
        entry = catalog_entry(model)
        served = served_alias_note(model)
        mapped = [] if served is None else [f"{model!r} mapped to {entry.name}: {served}"]
        return entry.architecture, entry.name, mapped, False
    raise InvalidRequestError(
        f"model must be a name, Architecture, config path/dict or size in billions, got {type(model).__name__}",
        field="model",
        reason="bad model type",
    )

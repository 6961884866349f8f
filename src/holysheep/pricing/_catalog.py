"""The API price catalog: packaged vendor prices, user overrides and lookup. Standard library only."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from .._exceptions import InvalidRequestError, UnknownModelError

__all__ = ["PRICE_FILE_ENV", "ModelPrice", "load_prices", "price_for", "prices", "reset_prices", "set_price"]

PRICE_FILE_ENV = "HOLYSHEEP_PRICE_FILE"
"""Environment variable naming a JSON override file that is loaded on first use of the catalog."""


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens for one API model. ``None`` means not known.

    ``blended_per_m`` is one all-tokens figure (``blended_kind`` says where it came from: ``"blog"``
    for the HolySheep blog's single figures, ``"user"`` for ``set_price``).
    """

    model: str
    input_per_m: float | None = None
    output_per_m: float | None = None
    cached_input_per_m: float | None = None
    blended_per_m: float | None = None
    blended_kind: str | None = None
    blended_note: str = ""
    provider: str = ""
    as_of: str = ""
    source: str = ""
    notes: str = ""
    aliases: tuple[str, ...] = ()

    def per_million(self, input_fraction: float | None = None) -> float | None:
        """Effective $/M tokens.

        With ``input_fraction`` (share of tokens that are prompt tokens) and both input and output
        prices known: ``f * input + (1 - f) * output``. Otherwise the blended figure, then the output
        price (every token counted as a generated one), then the input price.
        """
        if input_fraction is not None:
            _check_fraction(input_fraction)
            if self.input_per_m is not None and self.output_per_m is not None:
                return input_fraction * self.input_per_m + (1 - input_fraction) * self.output_per_m
        for v in (self.blended_per_m, self.output_per_m, self.input_per_m):
            if v is not None:
                return v
        return None

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float | None:
        """USD for one request. ``cached_tokens`` (part of ``prompt_tokens``) use the cached rate if known.

        Uses input/output prices when both are known, else the blended price for all tokens.
        """
        if self.input_per_m is not None and self.output_per_m is not None:
            cached = cached_tokens if 0 < cached_tokens < prompt_tokens else (prompt_tokens if cached_tokens > 0 else 0)
            cached_rate = self.cached_input_per_m if self.cached_input_per_m is not None else self.input_per_m
            usd = (prompt_tokens - cached) * self.input_per_m + cached * cached_rate
            return (usd + completion_tokens * self.output_per_m) / 1e6
        if self.blended_per_m is not None:
            return (prompt_tokens + completion_tokens) * self.blended_per_m / 1e6
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the entry."""
        return {
            "model": self.model,
            "provider": self.provider,
            "input_per_m": self.input_per_m,
            "cached_input_per_m": self.cached_input_per_m,
            "output_per_m": self.output_per_m,
            "blended_per_m": self.blended_per_m,
            "blended_kind": self.blended_kind,
            "blended_note": self.blended_note,
            "as_of": self.as_of,
            "source": self.source,
            "notes": self.notes,
            "aliases": list(self.aliases),
        }


def _check_fraction(f: float) -> None:
    if not 0.0 <= f <= 1.0:
        raise InvalidRequestError(
            f"input_fraction must be between 0 and 1 (share of tokens that are prompt tokens), got {f!r}",
            field="input_fraction",
            reason="out of range",
        )


_entries: dict[str, ModelPrice] = {}
_keys: dict[str, str] = {}
_resolved: dict[str, ModelPrice | None] = {}  # model name as asked -> entry; cleared whenever the catalog changes
_loaded = False
_load_lock = threading.RLock()
_loading = False


@functools.lru_cache(maxsize=1024)  # pure; called once per priced response
def _norm(model: str) -> str:
    """Lower case, provider prefix and date suffix dropped, '.', '_' and ' ' read as '-'."""
    s = model.strip().lower().rsplit("/", 1)[-1]
    s = re.sub(r"[._ ]", "-", s)
    s = re.sub(r"-(\d{4}-\d{2}-\d{2}|\d{8})$", "", s)
    return re.sub(r"-latest$", "", s)


def _num(v: object, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise InvalidRequestError(f"{where} must be a non-negative number, got {v!r}", field=where)
    return float(v)


def _entry(raw: Mapping[str, Any], where: str) -> ModelPrice:
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidRequestError(f"{where}: every price entry needs a 'model' string", field=where)
    aliases = raw.get("aliases") or []
    return ModelPrice(
        model=model,
        input_per_m=_num(raw.get("input_per_m"), f"{where}.input_per_m"),
        output_per_m=_num(raw.get("output_per_m"), f"{where}.output_per_m"),
        cached_input_per_m=_num(raw.get("cached_input_per_m"), f"{where}.cached_input_per_m"),
        blended_per_m=_num(raw.get("blended_per_m"), f"{where}.blended_per_m"),
        blended_kind=raw.get("blended_kind"),
        blended_note=str(raw.get("blended_note") or ""),
        provider=str(raw.get("provider") or ""),
        as_of=str(raw.get("as_of") or ""),
        source=str(raw.get("source") or ""),
        notes=str(raw.get("notes") or ""),
        aliases=tuple(str(a) for a in aliases),
    )


def _put(entry: ModelPrice) -> None:
    _resolved.clear()
    _entries[entry.model] = entry
    for name in (entry.model, *entry.aliases):
        _keys[_norm(name)] = entry.model


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    global _loading
    with _load_lock:  # threads (batch workers, bench) may price their first response at the same time
        if _loaded or _loading:  # _loading: a re-entrant call from load_prices() in this same thread
            return
        _loading = True
        try:
            _load_packaged()
            _loaded = True
        finally:
            _loading = False


def _load_packaged() -> None:
    text = resources.files("holysheep.pricing").joinpath("data/api_prices.json").read_text(encoding="utf-8")
    for i, raw in enumerate(json.loads(text)["models"]):
        _put(_entry(raw, f"api_prices.json[{i}]"))
    env = os.environ.get(PRICE_FILE_ENV)
    if env:
        load_prices(env)


def reset_prices() -> None:
    """Forget every override and reload the packaged catalog (and ``$HOLYSHEEP_PRICE_FILE``)."""
    global _loaded
    _entries.clear()
    _keys.clear()
    _resolved.clear()
    _loaded = False
    _ensure_loaded()


def _lookup(model: str) -> ModelPrice | None:
    if model in _resolved:  # each name is resolved once (every priced response asks again)
        return _resolved[model]
    _ensure_loaded()
    key = _keys.get(_norm(model))
    found = _entries[key] if key else None
    if len(_resolved) >= 1024:
        _resolved.clear()
    _resolved[model] = found
    return found


def price_for(model: str) -> ModelPrice:
    """Catalog entry for ``model`` (aliases, provider prefixes and date suffixes are accepted).

    Raises ``UnknownModelError`` naming the closest known models; add one with ``set_price``.
    """
    found = _lookup(model)
    if found is not None:
        return found
    close = difflib.get_close_matches(_norm(model), list(_keys), n=6, cutoff=0.5)
    names = list(dict.fromkeys(_keys[k] for k in close))[:3]
    hint = f" Did you mean: {', '.join(names)}?" if names else ""
    raise UnknownModelError(
        f"No API price for model {model!r}.{hint} Add one with "
        "holysheep.pricing.set_price(model, input_per_m=..., output_per_m=...).",
        field="model",
        reason="model not in the price catalog",
    )


def prices() -> list[ModelPrice]:
    """Every catalog entry, overrides included."""
    _ensure_loaded()
    return list(_entries.values())


def set_price(
    model: str,
    *,
    input_per_m: float | None = None,
    output_per_m: float | None = None,
    blended_per_m: float | None = None,
    cached_input_per_m: float | None = None,
    as_of: str = "",
    source: str = "user",
) -> ModelPrice:
    """Add or override a model's price (USD per million tokens); given fields replace the old ones."""
    if all(v is None for v in (input_per_m, output_per_m, blended_per_m, cached_input_per_m)):
        raise InvalidRequestError(
            "set_price needs at least one of input_per_m, output_per_m, blended_per_m, cached_input_per_m",
            field="set_price",
            reason="no price given",
        )
    given = {
        "input_per_m": _num(input_per_m, "input_per_m"),
        "output_per_m": _num(output_per_m, "output_per_m"),
        "blended_per_m": _num(blended_per_m, "blended_per_m"),
        "cached_input_per_m": _num(cached_input_per_m, "cached_input_per_m"),
    }
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    changes.update(as_of=as_of, source=source)
    if blended_per_m is not None:
        changes.update(blended_kind="user", blended_note="set by the user")
    old = _lookup(model)
    entry = replace(old, **changes) if old is not None else ModelPrice(model=model, **changes)
    _put(entry)
    return entry


def load_prices(path: str | PathLike[str]) -> list[ModelPrice]:
    """Apply an override file: JSON ``{"models": [...]}`` or a list of entries shaped like the catalog.

    An entry for a known model replaces the fields it gives; a new model is added.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidRequestError(f"cannot read price file {str(p)!r}: {exc}", field="path") from None
    items = doc.get("models") if isinstance(doc, dict) else doc
    if not isinstance(items, list) or not all(isinstance(r, Mapping) for r in items):
        raise InvalidRequestError(f"{p.name}: expected {{\"models\": [...]}} or a list of entries", field="path")
    _ensure_loaded()
    out = []
    for i, raw in enumerate(items):
        new = _entry(raw, f"{p.name}[{i}]")
        old = _lookup(new.model)
        if old is not None:
            given = {k: getattr(new, k) for k in raw if k in ModelPrice.__dataclass_fields__ and k != "model"}
            new = replace(old, **given)
        _put(new)
        out.append(new)
    return out

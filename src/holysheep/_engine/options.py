"""Batch options: ``BatchOptions`` (checked before any request) and splitting ``BatchParams``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Literal

from holysheep._core.batch_params import (
    BATCH_OPTION_NAMES,
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRY_WINDOW_S,
    HOOK_NAMES,
)
from holysheep._core.option_checks import check_int, check_max_retries, check_non_negative, check_positive_or_none
from holysheep._core.retry import is_quota_exhausted
from holysheep._core.wire import WireFormat
from holysheep._engine.gc_scope import DEFAULT_GC_THRESHOLD
from holysheep._engine.results import BatchResult
from holysheep._engine.spend import Pricer, check_max_cost
from holysheep._exceptions import InvalidRequestError

__all__ = ["DEFAULTS", "BatchOptions", "Hooks", "OnResult", "batch_wire", "check_requests", "is_quota_exhausted",
           "split_params"]

OnResult = Callable[[BatchResult], None]


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs (see ``BatchParams`` for the meaning of each field). Checked on construction."""

    concurrency: int = DEFAULT_CONCURRENCY
    rpm: float | Literal["auto"] | None = "auto"
    tpm: float | Literal["auto"] | None = "auto"
    retry_budget: float | None = 0.2
    adaptive: bool = True
    outage_after_s: float = 60.0
    outage_failure_ratio: float = 0.9
    outage_window: int = 100
    max_pause_s: float = 300.0
    retry_window_s: float | None = DEFAULT_RETRY_WINDOW_S
    read_ahead: int | None = None
    check_quota: bool = True
    require_quota: bool = False
    gc_threshold: int | None = DEFAULT_GC_THRESHOLD
    max_cost_usd: float | None = None
    prices: Mapping[str, object] | None = None
    cache: object = None
    idempotency_seed: str | None = None

    def __post_init__(self) -> None:
        check_max_cost(self.max_cost_usd)
        if self.prices is not None:
            Pricer(self.prices)  # checks every entry
        check_int(self.concurrency, "concurrency", 1)
        check_positive_or_none(self.rpm, "rpm", allow=("auto",))
        check_positive_or_none(self.tpm, "tpm", allow=("auto",))
        if self.retry_budget is not None:
            check_non_negative(self.retry_budget, "retry_budget")
        check_non_negative(self.outage_after_s, "outage_after_s")
        check_non_negative(self.max_pause_s, "max_pause_s")
        if self.retry_window_s is not None:
            check_non_negative(self.retry_window_s, "retry_window_s")
        ratio = self.outage_failure_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
            raise InvalidRequestError(f"outage_failure_ratio must be a number in (0, 1], got {ratio!r}.",
                                      field="outage_failure_ratio")
        check_int(self.outage_window, "outage_window", 1)
        if self.read_ahead is not None:
            check_int(self.read_ahead, "read_ahead", 1)
        if self.gc_threshold is not None:
            check_int(self.gc_threshold, "gc_threshold", 1)
        if self.idempotency_seed is not None and not isinstance(self.idempotency_seed, str):
            raise InvalidRequestError(f"idempotency_seed must be a string or None, got "
                                      f"{type(self.idempotency_seed).__name__}.", field="idempotency_seed")
        for name in ("adaptive", "check_quota", "require_quota"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidRequestError(f"{name} must be True or False, got {getattr(self, name)!r}.",
                                          field=name)


DEFAULTS: Mapping[str, Any] = MappingProxyType({**{f.name: f.default for f in fields(BatchOptions)},
                                               "max_retries": None})
"""Every batch option's default: the same for ``batch()``, ``run_jsonl`` and ``holysheep batch``
(``max_retries=None``: the batch's own retry policy)."""


@dataclass(frozen=True)
class Hooks:
    """The callbacks of a batch (checked: each is callable or None)."""

    progress: object = False
    on_result: OnResult | None = None
    on_progress: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        for name in ("on_result", "on_progress"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise InvalidRequestError(f"{name} must be a function or None, got {type(value).__name__}.",
                                          field=name)


def batch_wire(params: Mapping[str, object]) -> WireFormat | None:
    """The batch's wire format (``wire=``, set by ``client.responses.batch`` and ``client.wire(fmt).batch``);
    None: chat completions (and embeddings for ``input`` items)."""
    wire = params.get("wire")
    if wire is not None and not isinstance(wire, WireFormat):
        raise InvalidRequestError(f"wire must be a WireFormat, got {type(wire).__name__}.", field="wire")
    return wire


def split_params(params: Mapping[str, Any]) -> tuple[BatchOptions, Hooks, dict[str, object]]:
    """``BatchParams`` as engine options, hooks and ``create()`` defaults (None values dropped); every
    option is checked here, before any request (``wire``, the format, is read by `batch_wire`)."""
    options = {k: v for k, v in params.items() if k in BATCH_OPTION_NAMES}
    hooks = {k: v for k, v in params.items() if k in HOOK_NAMES}
    defaults = {k: v for k, v in params.items()  # tool_timeout=None means no limit: it is kept
                if k not in BATCH_OPTION_NAMES and k not in HOOK_NAMES and k != "wire"
                and (v is not None or k == "tool_timeout")}
    _check_known(defaults, batch_wire(params))
    if "max_retries" in defaults:
        check_max_retries(defaults["max_retries"])
    if "stream" in defaults:
        raise InvalidRequestError("stream=True is not supported in a batch.", field="stream")
    if "tools" in defaults:  # functions and models become strict tools once, checked before any request
        from holysheep._core.tools import tool_set

        defaults["tools"] = tool_set(defaults["tools"]).params
    if "max_turns" in defaults:
        from holysheep._core.tool_loop import check_max_turns

        check_max_turns(defaults["max_turns"])
    if "tool_timeout" in defaults:
        from holysheep._core.tool_limits import check_tool_timeout

        check_tool_timeout(defaults["tool_timeout"])
    return BatchOptions(**options), Hooks(**hooks), defaults


def _check_known(defaults: Mapping[str, object], wire: WireFormat | None = None) -> None:
    """A misspelt option fails the whole batch up front (it would otherwise fail every item)."""
    from holysheep._core.request import CHAT_PARAM_NAMES

    if wire is not None and wire.param_names is None:
        return  # a format that takes any field
    known = (CHAT_PARAM_NAMES | {"model", "max_repairs", "max_turns", "tool_timeout", "dimensions", "encoding_format"}
             if wire is None or wire.param_names is None else wire.param_names | {"model"} | _tool_loop_names(wire))
    for key in defaults:
        if key not in known:
            import difflib

            choices = sorted(known | BATCH_OPTION_NAMES | HOOK_NAMES)
            close = difflib.get_close_matches(str(key).lower(), choices, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InvalidRequestError(
                f"batch() got an unknown parameter {key!r}.{hint} Batch options are listed in BatchParams; "
                f"send server-specific fields through extra_body={{{key!r}: ...}}.", field=str(key),
                reason="unknown parameter")


def _tool_loop_names(wire: WireFormat) -> frozenset[str]:
    """The tool loop's options (``max_turns``, ``tool_timeout``) when ``wire`` can run one (it has `ToolTurns`)."""
    try:
        wire.tool_turns()
    except InvalidRequestError:
        return frozenset()
    return frozenset({"max_turns", "tool_timeout"})


def check_requests(requests: object) -> None:
    """``requests`` is an iterable of items, not one bare prompt or one dict (a common slip)."""
    if isinstance(requests, (str, bytes, Mapping)):
        raise InvalidRequestError(
            f"requests must be an iterable of items (prompts, message lists or dicts), got one "
            f"{type(requests).__name__}. Wrap a single item in a list: batch([item]).", field="requests")
    if not isinstance(requests, Iterable) and not hasattr(requests, "__aiter__"):
        raise InvalidRequestError(f"requests must be an iterable or async iterable, got {type(requests).__name__}.",
                                  field="requests")

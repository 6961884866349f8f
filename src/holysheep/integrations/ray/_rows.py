"""Rows in, rows out: a dataset row to a batch request, a batch result to the output columns, row ids."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from holysheep._core.wire import CHAT, wire_of_response
from holysheep.batch import BatchResult

__all__ = ["OUTPUT_COLUMNS", "RowSpec", "output_values"]

OUTPUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("response", "string"),
    ("finish_reason", "string"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("cost_usd", "float64"),
    ("error", "string"),
    ("error_type", "string"),
    ("attempts", "int64"),
    ("latency_s", "float64"),
    ("served_by", "string"),
)
"""The columns a processor adds, with their Arrow types, in order."""

_MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class RowSpec:
    """Which columns hold the request, and the create() parameters every row shares."""

    prompt_column: str | None = "prompt"
    messages_column: str | None = None
    id_column: str = "custom_id"
    params: Mapping[str, object] = field(default_factory=dict)
    whole_row: bool = False
    """The row itself is the batch item (a JSONL job's line: prompt, messages or an OpenAI Batch API body)."""

    def request(self, row: Mapping[str, Any]) -> Any:
        """The batch item for `row`: a dict with `messages` (and `custom_id`), or the raw bad value.

        A missing or malformed value is handed to the engine as is, so the row ends with an error.
        """
        if self.whole_row:
            return {k: _clean(v) for k, v in row.items() if not _missing(v)}
        if self.messages_column is not None:
            value = row.get(self.messages_column)
            messages = _clean(value)
            item: dict[str, object] = {"messages": messages}
        else:
            item = {"prompt": row.get(self.prompt_column or "prompt")}
        rid = row.get(self.id_column)
        if rid is not None:
            item["custom_id"] = rid
        return item

    def row_id(self, row: Mapping[str, object]) -> str:
        """The row's `id_column` value, or `sha256:<hex>` of its request (model, messages and parameters)."""
        rid = row.get(self.id_column)
        if rid is not None:
            return str(rid)
        item = self.request(row)
        item.pop("custom_id", None)
        if "prompt" in item and "messages" not in item:
            item["messages"] = [{"role": "user", "content": item.pop("prompt")}]
        payload = json.dumps({**self.params, **item}, sort_keys=True, default=str, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # None, or NaN from a pandas reader


def _clean(value: object) -> object:
    """Arrow gives a struct every field of its type; drop the ones this value does not set (recursively)."""
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if not _missing(v)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def output_values(result: BatchResult) -> tuple[Any, ...]:
    """The values of `OUTPUT_COLUMNS` for one result (None where the result has none)."""
    response = result.response
    latency = round(result.latency_s, 6)
    if response is None or result.error is not None:
        error = result.error
        return (None, None, None, None, None, _one_line(error) if error else "no response",
                type(error).__name__ if error else "APIError", result.attempts, latency, None)
    wire = wire_of_response(response) or CHAT  # the reply's format reads its text, reason and usage
    texts, reasons = wire.output_texts(response), wire.finish_reasons(response)
    usage = wire.usage(response)
    try:
        cost = wire.cost(response)
    except Exception:  # the price catalog is optional: an unknown model has no cost
        cost = None
    return (texts[0] if texts else None, reasons[0] if reasons else None,
            usage.input if usage is not None else None,
            usage.output if usage is not None else None,
            cost, None, None, result.attempts, latency, wire.served_by(response))

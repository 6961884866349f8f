"""The dry run: what a batch would send and cost, without sending anything (``estimate``,
``estimate_jsonl``, ``holysheep batch IN.jsonl --dry-run``)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from holysheep._core.wire import CHAT, EMBEDDINGS, WireFormat
from holysheep._engine.requests import BatchRequest, is_embedding, normalize_item
from holysheep._engine.spend import Pricer, check_max_cost, input_token_bound, output_token_bound
from holysheep._exceptions import InvalidRequestError
from holysheep.batch._tokens import count_prompt_tokens, load_tokenizer

__all__ = ["BatchEstimate", "ModelEstimate", "RefusedItem", "estimate", "estimate_jsonl"]


@dataclass
class ModelEstimate:
    """One model's share: items, tokens and cost range (``None`` costs: the model has no price)."""

    items: int = 0
    input_tokens: int = 0
    input_tokens_bound: int = 0
    output_tokens_bound: int = 0
    priced: bool = True
    cost_usd_low: float | None = 0.0
    cost_usd_high: float | None = 0.0


@dataclass
class RefusedItem:
    """An input that would not be sent, and why (``line``: its line number in a JSONL file)."""

    index: int
    custom_id: str | None
    reason: str
    line: int | None = None


@dataclass
class BatchEstimate:
    """What a dry run reports; ``to_dict()`` gives the JSON of ``--dry-run --json``.

    - ``items``: inputs that would be sent; ``refused``: the others, with their reasons.
    - ``input_tokens``: estimated prompt tokens (``tokenizer`` says how they were counted);
      ``input_tokens_bound``: the upper bound the cost cap reserves.
    - ``output_tokens_bound``: the most completion tokens of the bodies the items send (the larger of
      ``max_tokens`` / ``max_completion_tokens`` x ``n``, or the default bound for the ``unbounded_items``
      that set neither). Both bounds are the cap's own (``holysheep._engine.spend``).
    - ``estimated_cost_usd``: ``{"low", "high"}``: low is the prompts alone at the input price, high the
      worst case (bounds at the input and output prices), which is what ``max_cost_usd`` reserves in all:
      a cap of at least ``high`` never stops the batch. None when a model has no price.
    - ``models``: the same per model; ``unpriced_models``: models with no price.
    - ``expected_wall_s``: seconds at the rate limits in ``rate_limits`` (``source``: ``"given"``,
      ``"remembered"`` from this process's earlier batches, or None when none is known).
    """

    items: int = 0
    refused: list[RefusedItem] = field(default_factory=list)
    skipped: int = 0
    input_tokens: int = 0
    input_tokens_bound: int = 0
    output_tokens_bound: int = 0
    unbounded_items: int = 0
    estimated_cost_usd: dict[str, float] | None = None
    models: dict[str, ModelEstimate] = field(default_factory=dict)
    unpriced_models: list[str] = field(default_factory=list)
    max_cost_usd: float | None = None
    tokenizer: str = "chars/4"
    expected_wall_s: float | None = None
    rate_limits: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the keys of ``--dry-run --json``)."""
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"{self.items} item(s) would be sent" + (f", {len(self.refused)} refused" if self.refused else "")
                 + (f", {self.skipped} already done" if self.skipped else ""),
                 f"input tokens ~{self.input_tokens:,} (counted with {self.tokenizer}; bound "
                 f"{self.input_tokens_bound:,}), output tokens at most {self.output_tokens_bound:,}"]
        if self.unbounded_items:
            lines.append(f"{self.unbounded_items} item(s) set no max_tokens: their output bound is an assumption")
        for name, m in self.models.items():
            cost = (f"${m.cost_usd_low:.4f} - ${m.cost_usd_high:.4f}" if m.priced and m.cost_usd_low is not None
                    and m.cost_usd_high is not None else "no price (pass prices= / --price)")
            lines.append(f"  {name}: {m.items} item(s), ~{m.input_tokens:,} in, <= {m.output_tokens_bound:,} out, "
                         f"{cost}")
        if self.estimated_cost_usd is not None:
            lines.append(f"cost ${self.estimated_cost_usd['low']:.4f} - ${self.estimated_cost_usd['high']:.4f}")
        if self.expected_wall_s is not None:
            lines.append(f"expected wall time ~{self.expected_wall_s:.0f} s at {self._limits()}")
        else:
            lines.append("expected wall time: unknown (no rate limit given or remembered; pass --rpm / --tpm)")
        for refused in self.refused[:20]:
            where = f"line {refused.line}" if refused.line is not None else f"item {refused.index}"
            lines.append(f"refused {where}{f' ({refused.custom_id})' if refused.custom_id else ''}: {refused.reason}")
        if len(self.refused) > 20:
            lines.append(f"... and {len(self.refused) - 20} more refused")
        return "\n".join(lines)

    def _limits(self) -> str:
        parts = [f"{self.rate_limits[k]:,.0f} {k.upper()}" for k in ("rpm", "tpm") if self.rate_limits.get(k)]
        return ", ".join(parts) + f" ({self.rate_limits.get('source')})"


def wire_body(index: int, params: Mapping[str, object], wire: WireFormat | None = None) -> Mapping[str, Any]:
    """The body an item's first request sends (every default and ``extra_body`` applied, a structured-output or
    agent item's first request made by its loop), built by the batch's own builder: what the cap reserves.
    ``wire``: the item's format when it is not chat completions or embeddings (a ``/v1/responses`` line)."""
    from holysheep._core.item_spec import item_spec
    from holysheep._engine.item_plans import request_of

    params = {k: v for k, v in params.items() if k != "custom_id"}  # a JSONL line's id is not sent
    if wire is not None:
        return wire.spec(params).body or {}
    return item_spec(request_of(BatchRequest(index, None, params)), bytes).body or {}


def _up(usd: float) -> float:
    """Rounded up to a millionth of a dollar."""
    return math.ceil(usd * 1e6 - 1e-6) / 1e6


class _Tally:
    def __init__(self, prices: Mapping[str, object] | None, max_cost_usd: float | None, tokenizer: str) -> None:
        self.pricer = Pricer(prices)
        self.tokenizer = load_tokenizer(tokenizer)
        self.result = BatchEstimate(max_cost_usd=check_max_cost(max_cost_usd), tokenizer=self.tokenizer.name)
        self.charge_tokens = 0  # what the TPM limiter would charge in all

    def add(self, index: int, custom_id: str | None, params: Mapping[str, object], line: int | None,
            wire: WireFormat | None = None) -> None:
        if wire is None and "body" in params and "url" in params:  # a JSONL line of another format keeps its url
            request = normalize_item(params, index, {}, where="")
            wire, params = request.wire, request.params
        try:
            body = wire_body(index, params, wire)
        except Exception as exc:  # what a real run would refuse before sending (temperature=9, ...)
            self.result.refused.append(RefusedItem(index, custom_id, str(exc), line))
            return
        result, model = self.result, str(body.get("model"))
        price = self.pricer.price(model)
        if price is None and result.max_cost_usd is not None:
            result.refused.append(RefusedItem(index, custom_id, f"model {model!r} has no price, and max_cost_usd "
                                              "needs one: pass prices= (--price MODEL=IN,OUT)", line))
            return
        fmt = wire or (EMBEDDINGS if is_embedding(params) else CHAT)
        tokens = (count_prompt_tokens(body.get(CHAT.prompt_field), self.tokenizer) if wire is None
                  else self.tokenizer.count(wire.prompt_text(body)))
        bound = input_token_bound(body, fmt)
        out, given = output_token_bound(body, fmt)
        m = result.models.setdefault(model, ModelEstimate())
        m.items += 1
        m.input_tokens += tokens
        m.input_tokens_bound += bound
        m.output_tokens_bound += out
        if price is None:
            m.priced, m.cost_usd_low, m.cost_usd_high = False, None, None
        elif m.cost_usd_low is not None and m.cost_usd_high is not None:
            m.cost_usd_low += price.cost(tokens, 0)
            m.cost_usd_high += price.cost(bound, out)
        result.items += 1
        result.input_tokens += tokens
        result.input_tokens_bound += bound
        result.output_tokens_bound += out
        result.unbounded_items += not given
        self.charge_tokens += tokens + out

    def finish(self, rpm: float | None, tpm: float | None, source: str | None) -> BatchEstimate:
        result = self.result
        result.unpriced_models = sorted(name for name, m in result.models.items() if not m.priced)
        low = sum(m.cost_usd_low or 0.0 for m in result.models.values())
        high = sum(m.cost_usd_high or 0.0 for m in result.models.values())
        for m in result.models.values():
            if m.cost_usd_low is not None and m.cost_usd_high is not None:
                m.cost_usd_low, m.cost_usd_high = round(m.cost_usd_low, 6), _up(m.cost_usd_high)
        if not result.unpriced_models:  # high rounds up: a cap of `high` never stops the batch
            result.estimated_cost_usd = {"low": round(low, 6), "high": _up(high)}
        waits = [result.items / rpm * 60 if rpm else 0.0, self.charge_tokens / tpm * 60 if tpm else 0.0]
        result.expected_wall_s = round(max(waits), 1) if (rpm or tpm) else None
        result.rate_limits = {"rpm": rpm, "tpm": tpm, "source": source if (rpm or tpm) else None}
        return result


def _limits(rpm: float | None, tpm: float | None, client: Any,
            model: object = None) -> tuple[float | None, float | None, str | None]:
    for name, value in (("rpm", rpm), ("tpm", tpm)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise InvalidRequestError(f"{name} must be a positive number or None, got {value!r}.", field=name)
    if rpm or tpm:
        return rpm, tpm, "given"
    if client is not None:
        from holysheep._clients.senders import limits_key
        from holysheep._engine.server_limits import LIMITS_MEMORY, limits_scope

        known, limits = LIMITS_MEMORY.recall(limits_scope(limits_key(client), model))
        if known and limits is not None and (limits.limit_requests or limits.limit_tokens):
            return limits.limit_requests, limits.limit_tokens, "remembered"
    return None, None, None


def _defaults(model: str | None, defaults: Mapping[str, object]) -> dict[str, object]:
    """The create() defaults, checked as batch() checks them (a misspelt one is an error, not ignored)."""
    from holysheep._engine.options import split_params

    _, _, base = split_params({**defaults, "model": model})
    return base


def estimate(requests: Iterable[object], *, model: str | None = None, prices: Mapping[str, object] | None = None,
             max_cost_usd: float | None = None, rpm: float | None = None, tpm: float | None = None,
             tokenizer: str = "auto", client: object = None, **defaults: object) -> BatchEstimate:
    """A dry run of a batch: what it would send and cost. Sends nothing.

    ``requests`` and ``model`` / other ``create()`` defaults (``max_tokens=``, ...) are those of
    ``batch()``. ``prices`` adds or overrides prices (``{"my-model": (input_per_m, output_per_m)}``);
    with ``max_cost_usd`` the items a capped batch would refuse (unpriced models) are listed in
    ``refused``. ``rpm`` / ``tpm`` give the rate limits for the wall-time estimate; else a ``client``'s
    limits remembered from this process's earlier batches are used. ``tokenizer``: ``"auto"`` (a real
    tokenizer when one is installed with its data, else chars/4), ``"tiktoken"``, ``"bpe-openai"`` or
    ``"chars/4"``.
    """
    from holysheep._engine.options import check_requests

    check_requests(requests)
    base = _defaults(model, defaults)
    tally = _Tally(prices, max_cost_usd, tokenizer)
    for index, item in enumerate(requests):
        request = normalize_item(item, index, base, where="")
        if request.invalid is not None:
            tally.result.refused.append(RefusedItem(index, request.custom_id, str(request.invalid)))
            continue
        tally.add(index, request.custom_id, request.params, None, request.wire)
    return tally.finish(*_limits(rpm, tpm, client, base.get("model")))


def _done(path: Path) -> dict[str, bool]:
    """custom_id -> whether its last result succeeded, read from an output file without touching it (a real
    run's resume also cuts a torn last line off; a dry run writes nothing)."""
    from holysheep.batch._jsonl_output import _complete_lines, _head

    done: dict[str, bool] = {}
    path = Path(os.path.realpath(path))  # (a link to the output is followed, as the run does)
    if path.is_file():
        for line in _complete_lines(path):
            head = _head(line.data, line.whole)
            if head is not None:
                done[head[0]] = head[2]
    return done


def estimate_jsonl(input_path: str | os.PathLike[str], *, output_path: str | os.PathLike[str] | None = None,
                   resume: bool = False, model: str | None = None, prices: Mapping[str, object] | None = None,
                   max_cost_usd: float | None = None, rpm: float | None = None, tpm: float | None = None,
                   tokenizer: str = "auto", client: object = None, **defaults: object) -> BatchEstimate:
    """``estimate`` for a JSONL file (``holysheep batch IN.jsonl --dry-run``): refused lines carry their
    line numbers; with ``resume=True`` and ``output_path``, lines already done there are skipped (the
    output is only read). Duplicate custom_ids raise ``InvalidRequestError`` as a real run would."""
    from holysheep.batch._jsonl_input import read_lines

    src = Path(input_path)
    if not src.is_file():
        raise InvalidRequestError(f"input file {src} does not exist.", field="input_path")
    base = _defaults(model, defaults)
    prior = _done(Path(output_path)) if resume and output_path is not None else {}
    tally = _Tally(prices, max_cost_usd, tokenizer)
    seen: dict[str, int] = {}
    for line in read_lines(src, base):
        first = seen.setdefault(line.custom_id, line.lineno)
        if first != line.lineno:
            raise InvalidRequestError(f"{src}: duplicate custom_id {line.custom_id!r} on lines {first} and "
                                      f"{line.lineno}; every custom_id must be unique.", field="custom_id")
        if prior.get(line.custom_id):
            tally.result.skipped += 1
        elif line.item is None:
            tally.result.refused.append(RefusedItem(line.lineno - 1, line.custom_id, line.problem or "", line.lineno))
        else:
            tally.add(line.lineno - 1, line.custom_id, line.item, line.lineno)
    return tally.finish(*_limits(rpm, tpm, client, base.get("model")))

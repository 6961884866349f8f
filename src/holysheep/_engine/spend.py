"""Spend control: prices for a batch, each request's worst-case cost, and the cap that holds it.

``SpendCap`` is the budget of ``max_cost_usd=``. Before an item is sent the batch reserves its
worst-case cost (``worst_case``); the reply's usage settles it (``settle``). An item is sent only when
spent + reserved + its worst case fits in the cap, so the cap holds as long as each worst case is a
true bound:

Both bounds are read from the **final request body**, the JSON that goes on the wire after every default,
``extra_body`` field and CLI option was applied (``worst_case(body)``; the batch passes its plan's body, the
dry run builds the same body):

- **input**: the UTF-8 bytes of the JSON of every field of the body except the few that carry no prompt
  (``NOT_PROMPT_FIELDS``: the model, sampling and output limits, ids and flags), so ``messages``, ``tools``,
  ``response_format`` and any ``extra_body`` field (``system``, ...) all count, wherever they sit.
  Byte-level BPE tokenizers (GPT, Llama, Qwen, DeepSeek, ...) never make more tokens than bytes, and the
  JSON's quotes and keys exceed the chat template's few tokens per message. Each non-text part (an image,
  an audio clip) adds ``PART_TOKEN_BOUND``, which is an assumption, not a bound.
- **output**: the **largest** of ``max_tokens`` / ``max_completion_tokens`` / ``max_output_tokens`` present
  (a server may honour any), plus an explicit reasoning budget (``reasoning.max_tokens``,
  ``thinking.budget_tokens``, ``thinking_budget``), x ``n``; without a limit, ``DEFAULT_OUTPUT_BOUND``, an
  assumption: set ``max_tokens`` for a hard bound. Numbers are read as a server reads them: ``8000``, ``8000.0``
  and ``"8000"`` are the same limit (``lenient_count``).

A bound that is an assumption (no output limit, reasoning asked for without a budget, an image or audio part)
is *calibrated*: until one reply has settled, such a request goes alone. When a server bills more than was
reserved, the larger figure counts (``settle``), and every later reservation, and what is still in flight, is
scaled by the worst ratio seen (``overage``), so the cap holds from the first over-billed reply on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from holysheep._core.wire import CHAT, WireFormat
from holysheep._exceptions import InvalidRequestError

__all__ = ["DEFAULT_OUTPUT_BOUND", "NOT_PROMPT_FIELDS", "PART_TOKEN_BOUND", "Price", "Pricer", "SpendCap",
           "assumption", "check_max_cost", "check_priced", "input_token_bound", "output_limit",
           "output_token_bound", "reasoning_budget"]

DEFAULT_OUTPUT_BOUND = 4096
"""Output tokens reserved for a request that sets no ``max_tokens`` (an assumption, not a bound)."""
PART_TOKEN_BOUND = 2048
"""Tokens reserved for each non-text content part (image, audio, file) of a prompt."""

NOT_PROMPT_FIELDS = CHAT.not_prompt_fields
"""Chat completions' body fields that carry no prompt text (`WireFormat.not_prompt_fields`); every other field of
the body counts towards the input bound."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens: input (prompt), output (completion) and cached input."""

    model: str
    input_per_m: float
    output_per_m: float
    cached_input_per_m: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """USD for one request (cached tokens are part of the prompt tokens)."""
        cached = min(max(cached_tokens, 0), max(prompt_tokens, 0))
        rate = self.cached_input_per_m if self.cached_input_per_m is not None else self.input_per_m
        return ((max(prompt_tokens, 0) - cached) * self.input_per_m + cached * rate
                + max(completion_tokens, 0) * self.output_per_m) / 1e6


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise InvalidRequestError(f"{where} must be a non-negative number of USD per million tokens, got "
                                  f"{value!r}.", field="prices")
    return float(value)


def _price(model: str, value: object) -> Price:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Price(model, _number(value[0], f"prices[{model!r}][0]"), _number(value[1], f"prices[{model!r}][1]"))
    get = value.get if isinstance(value, Mapping) else (lambda k, v=value: getattr(v, k, None))
    inp, out = get("input_per_m"), get("output_per_m")
    if inp is None or out is None:
        raise InvalidRequestError(
            f"prices[{model!r}] needs input_per_m and output_per_m (USD per million tokens), e.g. "
            f"prices={{{model!r}: (0.5, 1.5)}} or --price {model}=0.5,1.5.", field="prices")
    cached = get("cached_input_per_m")
    return Price(model, _number(inp, f"prices[{model!r}].input_per_m"),
                 _number(out, f"prices[{model!r}].output_per_m"),
                 None if cached is None else _number(cached, f"prices[{model!r}].cached_input_per_m"))


class Pricer:
    """Prices by model name: the user's ``prices=`` first, then the price catalog (input + output prices;
    a blended-only entry counts its one figure for both)."""

    def __init__(self, prices: Mapping[str, object] | None = None) -> None:
        if prices is not None and not isinstance(prices, Mapping):
            raise InvalidRequestError(f"prices must be a dict of model -> (input_per_m, output_per_m), got "
                                      f"{type(prices).__name__}.", field="prices")
        self._given = {str(m): _price(str(m), v) for m, v in (prices or {}).items()}
        self._found: dict[str, Price | None] = {}

    def price(self, model: str) -> Price | None:
        """The price of ``model``, or None when neither ``prices=`` nor the catalog knows it."""
        if model in self._found:
            return self._found[model]
        found = self._given.get(model)
        if found is None:
            from holysheep.pricing._catalog import _lookup

            entry = _lookup(model)
            if entry is not None:
                inp = entry.input_per_m if entry.input_per_m is not None else entry.blended_per_m
                out = entry.output_per_m if entry.output_per_m is not None else entry.blended_per_m
                if inp is not None and out is not None:
                    found = Price(model, inp, out, entry.cached_input_per_m)
        self._found[model] = found
        return found

    def cost(self, model: str, prompt: int, completion: int, cached: int = 0) -> float | None:
        """USD for one reply's usage, or None when the model has no price."""
        price = self.price(model)
        return None if price is None else price.cost(prompt, completion, cached)


def _default(value: object) -> object:
    schema = getattr(value, "model_json_schema", None)
    if callable(schema):
        return schema()
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(value)


_TEXT_PARTS = frozenset({"text", "input_text", "output_text", "refusal"})


def _non_text_parts(messages: object) -> int:
    """Content parts that are not text (images, audio, files) in chat ``messages`` or Responses ``input``."""
    count = 0
    if isinstance(messages, (list, tuple)):
        for message in messages:
            content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
            if isinstance(content, list):
                count += sum(1 for p in content if isinstance(p, Mapping) and p.get("type", "text") not in _TEXT_PARTS)
    return count


def input_token_bound(body: Mapping[str, object], wire: WireFormat = CHAT) -> int:
    """An upper bound on the prompt tokens of a request body in ``wire``'s format (see the module's docstring)."""
    skip = wire.not_prompt_fields
    prompt = {k: v for k, v in body.items() if k not in skip and v is not None}
    size = len(json.dumps(prompt, ensure_ascii=False, default=_default, separators=(",", ":")).encode("utf-8"))
    return size + PART_TOKEN_BOUND * _non_text_parts(wire.prompt_parts(body))


def output_limit(body: Mapping[str, object], wire: WireFormat = CHAT) -> int | None:
    """The largest output limit the body sets (``wire.output_limit_fields``: chat's ``max_tokens`` /
    ``max_completion_tokens``, a server may honour either; read as a lenient server reads numbers), or None when
    it sets none."""
    return wire.output_limit(body)


def reasoning_budget(body: Mapping[str, object], wire: WireFormat = CHAT) -> int | None:
    """Reasoning tokens the body allows beyond its output limit, where it names a budget
    (`WireFormat.reasoning_budget`)."""
    return wire.reasoning_budget(body)


def output_token_bound(body: Mapping[str, object], wire: WireFormat = CHAT) -> tuple[int, bool]:
    """(most completion tokens of a request body, whether the body sets that bound itself): the output limit plus
    any reasoning budget, times the answers asked for; (0, True) for a format whose replies have no output
    (embeddings)."""
    if not wire.has_output:
        return 0, True
    limit = output_limit(body, wire)
    tokens = (DEFAULT_OUTPUT_BOUND if limit is None else limit) + (wire.reasoning_budget(body) or 0)
    return tokens * wire.answers(body), limit is not None


def assumption(body: Mapping[str, object], wire: WireFormat = CHAT) -> str | None:
    """What the body's worst case assumes, rather than reads from its own fields (None: nothing): ``model``
    with ``+no-limit`` (no output limit), ``+reasoning`` (reasoning asked for without a budget), ``+parts``
    (a non-text part, ``PART_TOKEN_BOUND``). Requests that assume the same are calibrated together."""
    if not wire.has_output:
        return None
    kinds = [kind for kind, assumed in (("no-limit", output_limit(body, wire) is None),
                                         ("reasoning", wire.reasoning_asked(body)
                                          and wire.reasoning_budget(body) is None),
                                         ("parts", _non_text_parts(wire.prompt_parts(body)) > 0)) if assumed]
    return "+".join([str(body.get("model") or ""), *kinds]) if kinds else None


def check_priced(models: Iterable[str], prices: Mapping[str, object] | None) -> None:
    """With a cap, every model needs a price: ``InvalidRequestError`` naming the first without one (before any
    request)."""
    pricer = Pricer(prices)
    missing = sorted(m for m in set(models) if pricer.price(m) is None)
    if missing:
        first = missing[0]
        more = f" (and {', '.join(map(repr, missing[1:]))})" if len(missing) > 1 else ""
        raise InvalidRequestError(
            f"no price for model {first!r}{more}, and max_cost_usd needs one to hold the cap: pass "
            f"prices={{{first!r}: (input_per_m, output_per_m)}} (USD per million tokens), or --price "
            f"{first}=IN,OUT on the command line. Nothing was sent.", field="prices", reason="no price")


def check_max_cost(value: object) -> float | None:
    """``max_cost_usd``: None or a positive number of USD."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise InvalidRequestError(f"max_cost_usd must be a positive number of USD (or None), got {value!r}.",
                                  field="max_cost_usd")
    return float(value)


class SpendCap:
    """The budget of one batch: ``reserve`` before a send, ``settle`` (or ``refund``) after.

    ``spent_usd`` is what replies cost (their usage at the batch's prices, or the reservation when that is
    more or the usage is missing); ``reserved_usd`` is held by requests in flight. A reservation is made only
    when ``spent + (reserved + worst case) x overage <= limit``: while the worst cases are bounds (``overage``
    1.0) ``spent_usd`` never passes the limit, and once a server billed more than a reservation, every
    reservation counts that much more.
    """

    def __init__(self, limit_usd: float, pricer: Pricer) -> None:
        self.limit_usd = limit_usd
        self.pricer = pricer
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.in_flight = 0
        self.unbounded_output = 0  # requests reserved with DEFAULT_OUTPUT_BOUND (no max_tokens)
        self.overage = 1.0
        """The worst ratio of a reply's billed cost to its reservation (1.0 while every bound held)."""
        self.overbilled = 0
        """Replies billed more than their reservation."""
        self.overbilled_usd = 0.0
        """What those replies cost beyond their reservations."""
        self.calibrated: set[str] = set()
        """The assumptions (``assumption``) a settled reply has checked: until then one request of each goes
        at a time."""
        self._assumed: dict[str, int] = {}  # requests in flight by unchecked assumption
        self._settled: asyncio.Event | None = None

    def worst_case(self, body: Mapping[str, object], wire: WireFormat = CHAT) -> float | None:
        """The most one request can cost, from its final body (what goes on the wire); None when its model
        has no price."""
        price = self.pricer.price(str(body.get("model") or ""))
        if price is None:
            return None
        output, _ = output_token_bound(body, wire)
        return price.cost(input_token_bound(body, wire), output)

    def fits(self, amount: float) -> bool:
        """True when ``amount`` more can be reserved now."""
        return self.spent_usd + (self.reserved_usd + amount) * self.overage <= self.limit_usd * (1 + 1e-12)

    def try_reserve(self, amount: float, *, assumed: str | None = None) -> bool:
        """Reserve ``amount`` when it fits now (``assumed``: what its bound assumes; until a reply with the same
        assumption settled, one such request goes at a time)."""
        unchecked = assumed is not None and assumed not in self.calibrated
        if (unchecked and self._assumed.get(assumed or "")) or not self.fits(amount):
            return False
        if unchecked:
            self._assumed[assumed or ""] = 1
        self.reserved_usd += amount
        self.in_flight += 1
        return True

    async def reserve(self, amount: float, *, assumed: str | None = None) -> bool:
        """Reserve ``amount``, waiting while requests in flight hold the room it needs (their replies may
        cost less than reserved); False when it cannot fit even with nothing in flight."""
        while not self.try_reserve(amount, assumed=assumed):
            if self.in_flight == 0:
                return False
            if self._settled is None:
                self._settled = asyncio.Event()
            event = self._settled
            await event.wait()
        return True

    def _release(self, amount: float) -> None:
        self.in_flight -= 1
        self.reserved_usd = max(0.0, self.reserved_usd - amount) if self.in_flight else 0.0
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    def settle(self, amount: float, cost: float | None, assumed: str | None = None) -> float:
        """A reply came: release its reservation and count the larger of its billed cost and the reservation
        when the cost passed it (None: usage unknown, the whole reservation counts). Returns what counted."""
        if assumed is not None:  # a reply checked the assumption (or, without usage, its reservation counts)
            self.calibrated.add(assumed)
            self._assumed.pop(assumed, None)
        if cost is not None and cost > amount * (1 + 1e-9):
            self.overbilled += 1
            self.overbilled_usd += cost - amount
            if amount > 0:
                self.overage = max(self.overage, cost / amount)
        counted = amount if cost is None else cost
        self.spent_usd += counted
        self._release(amount)
        return counted

    @property
    def passed(self) -> bool:
        """True when what was billed is past the limit (a server billed more than reserved)."""
        return self.spent_usd > self.limit_usd * (1 + 1e-12)

    def refund(self, amount: float, assumed: str | None = None) -> None:
        """The request was not billed (an error reply, or it was never sent): release its reservation."""
        if assumed is not None and assumed not in self.calibrated:
            self._assumed.pop(assumed, None)
        self._release(amount)

    def stop_reason(self, need: float) -> str:
        """Why the batch stops: names the cap and what was spent."""
        if self.passed:
            return (f"max_cost_usd=${self.limit_usd:.4f} passed: ${self.spent_usd:.4f} billed, the server billed "
                    f"${self.overbilled_usd:.4f} more than was reserved on {self.overbilled} "
                    f"repl{'y' if self.overbilled == 1 else 'ies'}")
        return (f"max_cost_usd=${self.limit_usd:.4f} reached: ${self.spent_usd:.4f} spent, the next item may "
                f"cost up to ${need:.4f}")

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
- **output**: the **largest** of ``max_tokens`` / ``max_completion_tokens`` present (a server may honour
  either) x ``n``; without either, ``DEFAULT_OUTPUT_BOUND``, an assumption: set ``max_tokens`` for a
  hard bound.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from holysheep._core.wire import CHAT, WireFormat
from holysheep._exceptions import InvalidRequestError

__all__ = ["DEFAULT_OUTPUT_BOUND", "NOT_PROMPT_FIELDS", "PART_TOKEN_BOUND", "Price", "Pricer", "SpendCap",
           "check_max_cost", "check_priced", "input_token_bound", "output_limit", "output_token_bound"]

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


def _non_text_parts(messages: object) -> int:
    count = 0
    if isinstance(messages, (list, tuple)):
        for message in messages:
            content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
            if isinstance(content, list):
                count += sum(1 for p in content if isinstance(p, Mapping) and p.get("type", "text") != "text")
    return count


def input_token_bound(body: Mapping[str, object], wire: WireFormat = CHAT) -> int:
    """An upper bound on the prompt tokens of a request body in ``wire``'s format (see the module's docstring)."""
    skip = wire.not_prompt_fields
    prompt = {k: v for k, v in body.items() if k not in skip and v is not None}
    size = len(json.dumps(prompt, ensure_ascii=False, default=_default, separators=(",", ":")).encode("utf-8"))
    return size + PART_TOKEN_BOUND * _non_text_parts(wire.prompt_parts(body))


def output_limit(body: Mapping[str, object], wire: WireFormat = CHAT) -> int | None:
    """The largest output limit the body sets (``wire.output_limit_fields``: chat's ``max_tokens`` /
    ``max_completion_tokens``, a server may honour either), or None when it sets none."""
    return wire.output_limit(body)


def output_token_bound(body: Mapping[str, object], wire: WireFormat = CHAT) -> tuple[int, bool]:
    """(most completion tokens of a request body, whether the body sets that bound itself); (0, True) for a format
    whose replies have no output (embeddings)."""
    if not wire.has_output:
        return 0, True
    limit = output_limit(body, wire)
    tokens = DEFAULT_OUTPUT_BOUND if limit is None else limit
    return tokens * wire.answers(body), limit is not None


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

    ``spent_usd`` is what replies cost (their usage at the batch's prices; a reply without usage counts
    its whole reservation); ``reserved_usd`` is held by requests in flight. Every reservation is made
    only when ``spent + reserved + worst case <= limit``, so ``spent_usd`` never passes the limit
    while the worst cases are bounds.
    """

    def __init__(self, limit_usd: float, pricer: Pricer) -> None:
        self.limit_usd = limit_usd
        self.pricer = pricer
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.in_flight = 0
        self.unbounded_output = 0  # requests reserved with DEFAULT_OUTPUT_BOUND (no max_tokens)
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
        return self.spent_usd + self.reserved_usd + amount <= self.limit_usd * (1 + 1e-12)

    def try_reserve(self, amount: float) -> bool:
        """Reserve ``amount`` when it fits now."""
        if not self.fits(amount):
            return False
        self.reserved_usd += amount
        self.in_flight += 1
        return True

    async def reserve(self, amount: float) -> bool:
        """Reserve ``amount``, waiting while requests in flight hold the room it needs (their replies may
        cost less than reserved); False when it cannot fit even with nothing in flight."""
        while not self.try_reserve(amount):
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

    def settle(self, amount: float, cost: float | None) -> None:
        """A reply came: release its reservation and count its cost (None: usage unknown, the whole
        reservation counts)."""
        self._release(amount)
        self.spent_usd += amount if cost is None else cost

    def refund(self, amount: float) -> None:
        """The request was not billed (an error reply, or it was never sent): release its reservation."""
        self._release(amount)

    def stop_reason(self, need: float) -> str:
        """Why the batch stops: names the cap and what was spent."""
        return (f"max_cost_usd=${self.limit_usd:.4f} reached: ${self.spent_usd:.4f} spent, the next item may "
                f"cost up to ${need:.4f}")

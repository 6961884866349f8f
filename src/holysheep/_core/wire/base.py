"""`WireFormat`: everything that differs between one API's JSON and another's, behind one interface.

A wire format (chat completions, embeddings, the Responses API, or a format defined outside the package)
owns the endpoint path, building the request from a call's arguments, parsing the reply into typed
objects, decoding stream events, the usage (tokens for spend, metrics and the batch summary), the fields
that bound the output (the cost cap's worst case), the error body's shape, and what identifies a request
for the response cache. The engine, the cache, the integrations, the CLI and the JSONL runner ask it and
read no format's fields themselves (``tests/engine/test_wire_seam.py`` checks that).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar, Generic, NamedTuple

from pydantic import BaseModel
from typing_extensions import TypeVar

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec
    from holysheep._core.stream_state import StreamState
    from holysheep._core.tool_results import ToolRun
    from holysheep._core.wire.tool_turns import ToolTurns

__all__ = ["TokenUsage", "WireFormat", "lenient_count", "positive_int", "text_chars"]

WireReplyT = TypeVar("WireReplyT", covariant=True, default=object)
"""A format's reply type (what its batch results' ``response`` is): for the type checker only."""
WireRunT = TypeVar("WireRunT", covariant=True, bound="ToolRun", default="ToolRun")
"""A format's tool run type (its batch results' ``tool_run``; ``Never`` for a format without tools)."""


class TokenUsage(NamedTuple):
    """A reply's billed tokens, in every format's terms: ``input`` (prompt) of which ``cached`` came from the
    prompt cache, and ``output`` (completion, reasoning included); ``total`` as the server reported it (0: not)."""

    input: int
    output: int = 0
    cached: int = 0
    total: int = 0


def positive_int(value: object) -> int | None:
    """``value`` when it is an int above 0 (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def lenient_count(value: object) -> int | None:
    """A positive count as a lenient server reads it: an int, a finite float (rounded up: ``8000.0`` is 8000,
    ``2.5`` may be read as 3) or a numeric string; None for anything else (absent, zero, negative, a bool). The
    cost cap reads limits and ``n`` this way, so that what a server may honour is what is reserved."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, float) and math.isfinite(value) and value > 0:
        return math.ceil(value)
    return None


def text_chars(content: object) -> int:
    """The characters of a message's ``content``: a string, or the ``text`` of its parts."""
    if isinstance(content, str):
        return len(content)
    total = 0
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                total += len(text) if isinstance(text, str) else 0
            elif isinstance(part, str):
                total += len(part)
    return total


class WireFormat(Generic[WireReplyT, WireRunT]):
    """One API's request and reply format. Subclass it and set the class attributes; the defaults suit a JSON
    API whose reply carries ``usage`` and ``model`` and whose errors are ``{"error": {...}}``. Its type parameters
    say what ``client.wire(fmt)`` returns (``WireFormat[MyReply]``: ``create`` and the batch results' ``response``
    are ``MyReply``; the type checker's only, no runtime check).

    A format defined outside the package is registered with `holysheep._core.wire.register` and used through
    ``client.wire(fmt).create(...)`` and ``.batch(...)`` (the Responses API is built the same way)."""

    name: ClassVar[str] = ""
    """A short name (``"chat"``, ``"embeddings"``, ``"responses"``): logs, spans, batch output."""
    operation: ClassVar[str] = ""
    """The GenAI semantic conventions' ``gen_ai.operation.name`` of its calls (``"chat"``, ``"embeddings"``); ``""``:
    named from the path (its last segment)."""
    api_type: ClassVar[str | None] = None
    """The ``openai.api.type`` its spans carry (``"responses"``), None for none."""
    path: ClassVar[str] = ""
    """The endpoint under the base URL (``"chat/completions"``)."""
    urls: ClassVar[frozenset[str]] = frozenset()
    """The ``url`` values of OpenAI Batch lines that mean this format (``"/v1/chat/completions"``)."""
    response_type: ClassVar[type[BaseModel]] = BaseModel
    """The type a reply parses into (the cache and the engine find the format of a reply by it)."""
    output_limit_fields: ClassVar[tuple[str, ...]] = ()
    """Body fields that bound the output tokens (the largest counts: a server may honour either)."""
    count_field: ClassVar[str | None] = None
    """The body field asking for several answers (``n``): the output bound is multiplied by it."""
    prompt_field: ClassVar[str] = "messages"
    """The field a bare prompt string of a batch goes in (see `prompt_params`)."""
    param_names: ClassVar[frozenset[str] | None] = None
    """The request arguments a call may pass (a batch's defaults are checked against them); None: any."""
    not_prompt_fields: ClassVar[frozenset[str]] = frozenset({"model", "stream"})
    """Body fields that carry no prompt text (the cost cap's input bound counts every other field)."""
    cacheable: ClassVar[bool] = True
    """Whether replies of this format are kept by the response cache."""
    has_output: ClassVar[bool] = True
    """False for a format whose reply has no generated tokens (embeddings): no output bound is reserved."""

    # ---------------------------------------------------------------- requests
    def spec(self, params: Mapping[str, object]) -> RequestSpec:
        """The non-streamed request that a call's (or a batch item's) arguments send; raises
        `InvalidRequestError` before any I/O."""
        raise NotImplementedError

    def prompt_params(self, prompt: str) -> dict[str, object]:
        """The request arguments of a bare prompt string (a batch input, ``holysheep batch`` text lines)."""
        return {self.prompt_field: [{"role": "user", "content": prompt}]}

    def has_prompt(self, params: Mapping[str, object]) -> bool:
        """True when ``params`` hold what this format sends as the prompt."""
        return self.prompt_field in params

    def prompt_text(self, params: Mapping[str, object]) -> str:
        """The prompt's text, joined (what a tokenizer counts for an estimate)."""
        value = params.get(self.prompt_field)
        if isinstance(value, str):
            return value
        parts: list[str] = []
        for message in value if isinstance(value, (list, tuple)) else ():
            content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
        return "\n".join(parts)

    def prompt_chars(self, params: Mapping[str, object]) -> int:
        """The prompt's characters (the batch's quick token estimate: chars / 4)."""
        value = params.get(self.prompt_field)
        if isinstance(value, str):
            return len(value)
        chars = 0
        for message in value if isinstance(value, (list, tuple)) else ():
            content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
            chars += text_chars(content)
        return chars

    def prompt_parts(self, body: Mapping[str, object]) -> object:
        """What holds the prompt's non-text parts (images, audio) in ``body`` (the cost cap adds a bound per part)."""
        return body.get(self.prompt_field)

    def output_limit(self, body: Mapping[str, object]) -> int | None:
        """The largest output bound ``body`` sets (`output_limit_fields`), None when it sets none."""
        limits = [v for v in (lenient_count(body.get(f)) for f in self.output_limit_fields) if v is not None]
        return max(limits) if limits else None

    def reasoning_asked(self, body: Mapping[str, object]) -> bool:
        """True when ``body`` asks for reasoning (``reasoning_effort``, ``reasoning.effort``, ``thinking``,
        ``enable_thinking``), which some servers bill beyond the output limit."""
        effort = body.get("reasoning_effort")
        if isinstance(effort, str) and effort not in ("none", "minimal"):
            return True
        reasoning, thinking = body.get("reasoning"), body.get("thinking")
        if isinstance(reasoning, Mapping) and reasoning.get("effort") not in (None, "none", "minimal"):
            return True
        if isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled"):
            return True
        kwargs = body.get("chat_template_kwargs")
        return body.get("enable_thinking") is True or (isinstance(kwargs, Mapping)
                                                       and kwargs.get("enable_thinking") is True)

    def reasoning_budget(self, body: Mapping[str, object]) -> int | None:
        """Reasoning tokens ``body`` allows beyond its output limit, where it names a budget: OpenRouter's
        ``reasoning.max_tokens``, Anthropic's ``thinking.budget_tokens``, a ``thinking_budget`` field."""
        reasoning, thinking = body.get("reasoning"), body.get("thinking")
        found = [lenient_count(reasoning.get("max_tokens")) if isinstance(reasoning, Mapping) else None,
                 lenient_count(thinking.get("budget_tokens")) if isinstance(thinking, Mapping) else None,
                 lenient_count(body.get("thinking_budget"))]
        budgets = [b for b in found if b is not None]
        return max(budgets) if budgets else None

    def answers(self, body: Mapping[str, object]) -> int:
        """How many answers ``body`` asks for (`count_field`, 1 by default)."""
        field = self.count_field
        n = lenient_count(body.get(field)) if field is not None else None
        return n or 1

    def cache_identity(self, body: Mapping[str, object]) -> Mapping[str, object] | None:
        """What identifies a request for the response cache (with the method, URL, query and key headers);
        None when it is never cached (a stream)."""
        return None if body.get("stream") else body

    # ---------------------------------------------------------------- replies
    def parse(self, content: bytes) -> object:
        """A reply's body as `response_type`."""
        return self.response_type.model_validate_json(content)

    def dump(self, response: object) -> str:
        """The JSON the response cache stores for a reply (`parse_stored` reads it back)."""
        assert isinstance(response, BaseModel)
        return response.model_dump_json()

    def parse_stored(self, raw: bytes) -> object:
        """A reply stored by the response cache (the JSON of the parsed reply)."""
        return self.response_type.model_validate_json(raw)

    def usage(self, response: object) -> TokenUsage | None:
        """The reply's billed tokens, None when it reports none."""
        return self.usage_block(getattr(response, "usage", None))

    def usage_block(self, usage: object) -> TokenUsage | None:
        """A ``usage`` object of this format (a reply's, or the one a stream's last event carried) as tokens."""
        return None

    def sum_usage(self, replies: Iterable[object]) -> object | None:
        """The usage of several replies of this format (a tool loop's turns) as one usage object of the format's
        own type: every token count and every breakdown count (cached, reasoning, ...) summed; None when no reply
        reports usage. A usage type that adds with ``+`` (chat's `CompletionUsage`, the Responses API's
        `ResponseUsage`: a usage without ``total_tokens`` counts input + output) is summed by it, any other by
        `sum_counts` (each declared count)."""
        from holysheep.types._base import sum_counts

        usages = [u for u in (getattr(r, "usage", None) for r in replies) if isinstance(u, BaseModel)]
        if not usages:
            return None
        add = getattr(type(usages[0]), "__add__", None)
        if add is None:
            return sum_counts(type(usages[0]), usages)
        total: object = usages[0]
        for usage in usages[1:]:
            total = add(total, usage)
        return total

    def model_of(self, response: object) -> str:
        """The model that answered."""
        model = getattr(response, "model", "")
        return model if isinstance(model, str) else ""

    def answered(self, response: object) -> bool:
        """True when the reply is an answer worth replaying from the cache (no refusal, not filtered, not empty)."""
        return True

    def has_answer(self, response: object) -> bool:
        """Some answer carries output (text or a tool call): then a usage of zero tokens cannot be true."""
        return any(self.output_texts(response))

    def output_texts(self, response: object) -> list[str | None]:
        """The text of each answer (one per choice; None for one without text, such as only tool calls)."""
        return []

    def finish_reasons(self, response: object) -> list[str | None]:
        """Why each answer ended (``stop``, ``length``, ``tool_calls``, ...)."""
        return []

    def outputs(self, response: object) -> list[tuple[str | None, str | None, object]]:
        """(text, finish reason, tool calls) of each answer: what a span records with content capture on."""
        texts, reasons = self.output_texts(response), self.finish_reasons(response)
        return [(text, reasons[i] if i < len(reasons) else None, None) for i, text in enumerate(texts)]

    def cost(self, response: object) -> float | None:
        """The reply's price in USD at catalog prices, None without usage or a known price."""
        usage = self.usage(response)
        if usage is None:
            return None
        from holysheep.pricing._cost import completion_cost

        try:
            return completion_cost(self.model_of(response), usage.input, usage.output, usage.cached)
        except Exception:  # the price catalog is optional
            return None

    def mark_cached(self, response: object, lookup_s: float) -> None:
        """Mark a reply served by the response cache (no request id, no retries, ``served_by="cache"``)."""
        setter: Callable[[tuple[None, int, float, str]], None] | None = getattr(response, "_set_transport", None)
        if setter is not None:
            setter((None, 0, lookup_s, "cache"))

    def served_by(self, response: object) -> str:
        """``"cache"`` for a reply the cache served (it is not stored again)."""
        served = getattr(response, "served_by", "")
        return served if isinstance(served, str) else ""

    # ---------------------------------------------------------------- streams and errors
    def stream_state(self, started_at: float, *, secret: str | None, max_event_bytes: int,
                     clock: Callable[[], float], max_text_bytes: int) -> StreamState:
        """The sans-I/O decoder of this format's ``stream=True`` events."""
        raise NotImplementedError(f"the {self.name or type(self).__name__} format has no stream")

    def tool_turns(self) -> ToolTurns:
        """This format's side of ``run_tools``'s loop: where the conversation goes, how a reply's tool calls are
        read and how a tool's result is sent back. Raises `InvalidRequestError` for a format without tools."""
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError(f"the {self.name or type(self).__name__} format has no tool calls to run.",
                                  field="tools")

    def replan(self, error: BaseException, spec: RequestSpec) -> bool:
        """True when a batch item whose request ``spec`` failed with ``error`` is to be planned again (this format
        now builds another request for it, such as the Responses API's bridge after a 404); False by default."""
        return False

    def error_fields(self, payload: object) -> Mapping[str, object] | None:
        """The error object of an error reply's JSON (``message``, ``type``, ``code``, ``param``)."""
        err = payload.get("error") if isinstance(payload, Mapping) else None
        if isinstance(err, Mapping):
            return err
        if isinstance(err, str):
            return {"message": err}
        return None

    def __repr__(self) -> str:
        return f"<wire format {self.name!r}: POST /{self.path}>"

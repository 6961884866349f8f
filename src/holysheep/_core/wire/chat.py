"""Chat completions (``POST /chat/completions``) as a `WireFormat`: OpenAI's ``messages`` in, ``choices`` out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from holysheep._core.answer import check_answer
from holysheep._core.wire.base import TokenUsage, WireFormat
from holysheep.types._base import sum_usages
from holysheep.types.chat import ChatCompletion, CompletionUsage

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec
    from holysheep._core.stream_state import StreamState
    from holysheep._core.tool_results import ToolRunResult  # noqa: F401  (quoted below: a type parameter only)
    from holysheep._core.wire.tool_turns import ToolTurns

__all__ = ["CHAT", "ChatWire", "parse_chat_completion"]

_validate_json: Callable[[bytes], ChatCompletion] | None = None


def parse_chat_completion(content: bytes) -> ChatCompletion:
    """A ``chat.completion`` body; servers that answer a non-stream request with SSE anyway (transformers
    serve 4.x) have their chunks folded into one completion. A body without a choice (``{}``, an error
    object, ``"choices": []``) raises `NoAnswerError` (the client's retryable `APIResponseValidationError`)."""
    global _validate_json
    if content[:1] == b"{" and _validate_json is not None:  # the usual case: straight to pydantic-core
        completion = _validate_json(content)
        return completion if completion.choices else check_answer(completion, content)
    if content[:64].lstrip().startswith((b"data:", b"event:")):
        import time

        from holysheep._core.stream_state import StreamState

        state = StreamState(time.perf_counter())
        state.feed(content)
        state.finish_stream()
        if state.chunks:
            return check_answer(state.final_completion(), content)
    completion = ChatCompletion.model_validate_json(content)  # builds the validator on first use
    _validate_json = ChatCompletion.__pydantic_validator__.validate_json
    return check_answer(completion, content)


class ChatWire(WireFormat[ChatCompletion, "ToolRunResult"]):
    """``chat.completions``: the request is ``create()``'s arguments; the reply a `ChatCompletion`."""

    name: ClassVar[str] = "chat"
    operation: ClassVar[str] = "chat"
    path: ClassVar[str] = "chat/completions"
    urls: ClassVar[frozenset[str]] = frozenset({"/v1/chat/completions", "/chat/completions", "v1/chat/completions",
                                                "chat/completions"})
    response_type: ClassVar[type[BaseModel]] = ChatCompletion
    output_limit_fields: ClassVar[tuple[str, ...]] = ("max_tokens", "max_completion_tokens")
    count_field: ClassVar[str | None] = "n"
    not_prompt_fields: ClassVar[frozenset[str]] = frozenset({
        "model", "max_tokens", "max_completion_tokens", "n", "temperature", "top_p", "frequency_penalty",
        "presence_penalty", "seed", "stream", "stream_options", "logprobs", "top_logprobs", "logit_bias",
        "parallel_tool_calls", "store", "service_tier", "reasoning_effort", "verbosity", "user", "safety_identifier",
        "metadata", "prompt_cache_key", "prompt_cache_retention", "modalities"})

    def spec(self, params: Mapping[str, object]) -> RequestSpec:
        from holysheep._core.item_spec import item_spec

        return item_spec(params, parse_chat_completion)

    def parse(self, content: bytes) -> object:
        return parse_chat_completion(content)

    def parse_stored(self, raw: bytes) -> object:
        return ChatCompletion.model_validate_json(raw)

    def usage_block(self, usage: object) -> TokenUsage | None:
        if usage is None:
            return None
        details = getattr(usage, "prompt_tokens_details", None)
        cached = (details.cached_tokens or 0) if details is not None else 0
        return TokenUsage(getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0), cached,
                          getattr(usage, "total_tokens", 0))

    def sum_usage(self, replies: Iterable[object]) -> CompletionUsage | None:
        """The replies' usage summed: ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (a reply without
        one counts prompt + completion) and every ``prompt_tokens_details``/``completion_tokens_details`` count."""
        return sum_usages(u for u in (getattr(r, "usage", None) for r in replies) if isinstance(u, CompletionUsage))

    def answered(self, response: object) -> bool:
        """Every choice is an answer: text or tool calls, no refusal, not stopped by a content filter."""
        choices = getattr(response, "choices", None) or []
        return bool(choices) and all(
            c.finish_reason != "content_filter" and c.message is not None and not c.message.refusal
            and bool(c.message.content or c.message.tool_calls) for c in choices)

    def has_answer(self, response: object) -> bool:
        """Some choice carries text or tool calls (usage of zero tokens cannot be true for it)."""
        return any(c.message is not None and (c.message.content or c.message.tool_calls)
                   for c in getattr(response, "choices", None) or ())

    def output_texts(self, response: object) -> list[str | None]:
        return [c.message.content if c.message is not None else None for c in getattr(response, "choices", None) or ()]

    def finish_reasons(self, response: object) -> list[str | None]:
        return [c.finish_reason for c in getattr(response, "choices", None) or ()]

    def outputs(self, response: object) -> list[tuple[str | None, str | None, object]]:
        return [(getattr(c.message, "content", None), c.finish_reason, getattr(c.message, "tool_calls", None))
                for c in getattr(response, "choices", None) or ()]

    def delta_text(self, chunk: object) -> str:
        """The text a streamed chunk adds to the first answer (choice 0)."""
        return "".join(c.delta.content for c in getattr(chunk, "choices", None) or ()
                       if c.index == 0 and c.delta.content)

    def cost(self, response: object) -> float | None:
        cost: float | None = getattr(response, "cost", None)
        return cost

    def tool_turns(self) -> ToolTurns:
        from holysheep._core.wire.tool_turns import CHAT_TOOLS

        return CHAT_TOOLS

    def stream_state(self, started_at: float, *, secret: str | None, max_event_bytes: int,
                     clock: Callable[[], float], max_text_bytes: int) -> StreamState:
        from holysheep._core.stream_state import StreamState

        return StreamState(started_at, secret=secret, max_event_bytes=max_event_bytes, clock=clock,
                           max_text_bytes=max_text_bytes)


CHAT = ChatWire()
"""The chat completions format."""

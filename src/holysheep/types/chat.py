"""Chat completion response models (OpenAI wire format) and the typed message parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BeforeValidator
from typing_extensions import NotRequired, Required, TypedDict

from holysheep.types import completion_create_params as completion_create_params
from holysheep.types._base import HolySheepModel, sum_counts
from holysheep.types.chat_params import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionContentPartImageParam,
    ChatCompletionContentPartInputAudioParam,
    ChatCompletionContentPartParam,
    ChatCompletionContentPartRefusalParam,
    ChatCompletionContentPartTextParam,
    ChatCompletionDeveloperMessageParam,
    ChatCompletionFunctionMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageToolCallParam,
    ChatCompletionNamedToolChoiceParam,
    ChatCompletionStreamOptionsParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionToolChoiceOptionParam,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
    ChatCompletionUserMessageParam,
)
from holysheep.types.chat_parts import (
    Annotation,
    ChatCompletionAudio,
    ChoiceDeltaAudio,
    ChoiceDeltaFunctionCall,
    ChoiceLogprobs,
    object_or_none,
    objects_or_none,
)

__all__ = [
    "ChatCompletion",
    "ChatCompletionAssistantMessageParam",
    "ChatCompletionContentPartImageParam",
    "ChatCompletionContentPartInputAudioParam",
    "ChatCompletionContentPartParam",
    "ChatCompletionContentPartRefusalParam",
    "ChatCompletionContentPartTextParam",
    "ChatCompletionDeveloperMessageParam",
    "ChatCompletionFunctionMessageParam",
    "ChatCompletionFunctionToolParam",
    "ChatCompletionMessageFunctionToolCallParam",
    "ChatCompletionMessageToolCallParam",
    "ChatCompletionNamedToolChoiceParam",
    "ChatCompletionStreamOptionsParam",
    "ChatCompletionSystemMessageParam",
    "ChatCompletionToolChoiceOptionParam",
    "ChatCompletionToolMessageParam",
    "ChatCompletionToolParam",
    "ChatCompletionUserMessageParam",
    "ChatMessageDict",
    "ChatCompletionChunk",
    "ChatCompletionMessage",
    "ChatCompletionMessageParam",
    "Choice",
    "ChoiceDelta",
    "ChoiceDeltaToolCall",
    "ChunkChoice",
    "CompletionTokensDetails",
    "CompletionUsage",
    "Function",
    "FunctionCall",
    "Message",
    "ModelName",
    "PromptTokensDetails",
    "ToolCall",
]

ModelName = Union[
    Literal["deepseek-v3.2", "gpt-4.1", "claude-sonnet-4.5", "gemini-2.5-flash"],
    str,
]
"""A model id. The literals are autocompletion hints; any string the API serves is accepted."""


class ChatMessageDict(TypedDict, total=False):
    """A chat message as a plain dict of any role: ``{"role": "user", "content": "Hi"}`` (holysheep's own, looser
    than openai's per-role ``TypedDict``s; both are accepted)."""

    role: Required[Literal["system", "developer", "user", "assistant", "tool", "function"]]
    content: Required[str | list[dict[str, Any]] | None]
    name: NotRequired[str]
    tool_calls: NotRequired[list[dict[str, Any]]]
    tool_call_id: NotRequired[str]
    reasoning_content: NotRequired[str | None]
    refusal: NotRequired[str | None]


ChatCompletionMessageParam = Union[
    ChatCompletionDeveloperMessageParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionUserMessageParam,
    ChatCompletionAssistantMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionFunctionMessageParam,
    ChatMessageDict,
]
"""A chat message as a plain dict: openai-python's ``ChatCompletionMessageParam`` (one ``TypedDict`` per role, from
`holysheep.types.chat_params`), or holysheep's looser `ChatMessageDict`."""


class Message(HolySheepModel):
    """A chat message as a typed object; interchangeable with `ChatCompletionMessageParam`."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    """The reasoning of a DeepSeek-style reply (kept when the message is sent back)."""
    refusal: str | None = None


def _str_id(value: object) -> object:
    """``None`` (a server that sent null) as ``""``: openai types these ids and names ``str``."""
    return "" if value is None else value


class FunctionCall(HolySheepModel):
    """The function a tool call invokes, with its JSON-encoded arguments (also the legacy ``function_call``)."""

    arguments: str = ""
    name: Annotated[str, BeforeValidator(_str_id)] = ""


class Function(FunctionCall):
    """A tool call's function (openai-python's ``Function``)."""


def _as_function(value: object) -> object:
    """A `FunctionCall` (the type ``function`` had before it was openai's `Function`) taken as its fields."""
    if isinstance(value, FunctionCall) and not isinstance(value, Function):
        return value.model_dump(exclude_unset=True)
    return value


class ToolCall(HolySheepModel):
    """A tool call made by the assistant (openai-python's ``ChatCompletionMessageFunctionToolCall``)."""

    _openai_name = "ChatCompletionMessageFunctionToolCall"

    id: Annotated[str, BeforeValidator(_str_id)] = ""
    """The call's id, to send back as the tool message's ``tool_call_id`` (``""`` when a server sent none)."""
    if TYPE_CHECKING:  # a FunctionCall is taken too (made a Function)
        function: FunctionCall
    else:
        function: Annotated[Function, BeforeValidator(_as_function)]
    type: str = "function"


class ChatCompletionMessage(HolySheepModel):
    """The assistant's message in a completion."""

    _shown_if_sent = frozenset({"reasoning_content"})

    content: str | None = None
    refusal: str | None = None
    role: str = "assistant"
    annotations: Annotated[list[Annotation] | None, BeforeValidator(objects_or_none)] = None
    audio: Annotated[ChatCompletionAudio | None, BeforeValidator(object_or_none)] = None
    function_call: Annotated[FunctionCall | None, BeforeValidator(object_or_none)] = None
    """The legacy function call (superseded by ``tool_calls``)."""
    tool_calls: list[ToolCall] | None = None
    reasoning_content: str | None = None
    """The model's reasoning, from servers that send it apart from the answer (DeepSeek, vLLM and SGLang
    reasoning parsers); ``None`` when the server sent none."""


class Choice(HolySheepModel):
    """One of the ``n`` alternatives in a completion."""

    finish_reason: str | None = None
    index: int = 0
    logprobs: Annotated[ChoiceLogprobs | None, BeforeValidator(object_or_none)] = None
    message: ChatCompletionMessage


class PromptTokensDetails(HolySheepModel):
    """Breakdown of the prompt tokens (``cached_tokens``: served from the prompt cache, billed lower)."""

    audio_tokens: int | None = None
    cache_write_tokens: int | None = None
    cached_tokens: int | None = None
    image_tokens: int | None = None
    text_tokens: int | None = None


class CompletionTokensDetails(HolySheepModel):
    """Breakdown of the completion tokens (``reasoning_tokens``: spent thinking, not in the reply)."""

    accepted_prediction_tokens: int | None = None
    audio_tokens: int | None = None
    reasoning_tokens: int | None = None
    rejected_prediction_tokens: int | None = None
    text_tokens: int | None = None


class CompletionUsage(HolySheepModel):
    """Token counts billed for a request."""

    completion_tokens: int = 0
    prompt_tokens: int = 0
    total_tokens: int = 0
    # Typed (not left in model_extra): reading a missing extra attribute raises inside pydantic, which
    # made `ChatCompletion.cost` cost as much CPU as parsing the whole reply.
    completion_tokens_details: Annotated[CompletionTokensDetails | None, BeforeValidator(object_or_none)] = None
    prompt_tokens_details: Annotated[PromptTokensDetails | None, BeforeValidator(object_or_none)] = None

    def __add__(self, other: object) -> CompletionUsage:
        """Two usages added up (the requests of one tool loop): ``prompt_tokens``, ``completion_tokens``,
        ``total_tokens`` (a usage without one counts prompt + completion) and every ``prompt_tokens_details``/
        ``completion_tokens_details`` count (None where neither has it)."""
        if not isinstance(other, CompletionUsage):
            return NotImplemented
        total = sum(u.total_tokens or u.prompt_tokens + u.completion_tokens for u in (self, other))
        return sum_counts(CompletionUsage, (self, other), total_tokens=total)


class _Keep:
    """The default of `_update_transport`'s ``request_id`` (None is a value there)."""


_KEEP = _Keep()


_cost_fn: Callable[[str, int, int, int], float | None] | None = None


def _completion_cost() -> Callable[[str, int, int, int], float | None]:
    """``pricing.completion_cost``, imported on first use: the price catalog loads only when a cost is asked."""
    global _cost_fn
    if _cost_fn is None:
        from holysheep.pricing._cost import completion_cost

        _cost_fn = completion_cost
    return _cost_fn


TransportFacts = tuple[Union[str, None], int, float, str]
"""What the transport knew about a response: ``(request_id, retries_taken, elapsed_s, served_by)``.

A plain tuple of immutable values, kept outside the pydantic fields (no validation cost). The garbage
collector stops tracking such a tuple at its first pass, so a batch that keeps thousands of responses
does not make every later collection walk them."""

_NO_FACTS: TransportFacts = (None, 0, 0.0, "primary")


class _ResponseMeta(HolySheepModel):
    """Adds transport facts (request id, retries, timing, which endpoint served it) to a response.

    They live in a slot rather than in pydantic private attributes: private attributes cost about as
    much again as validating a small completion, on every response.
    """

    __slots__ = ("_hs_transport",)
    if TYPE_CHECKING:  # a slot, not a field or a private attribute
        _hs_transport: TransportFacts

    @property
    def _transport(self) -> TransportFacts:
        try:
            return self._hs_transport
        except AttributeError:  # built by hand, not by a client
            return _NO_FACTS

    def _set_transport(self, transport: TransportFacts) -> None:
        object.__setattr__(self, "_hs_transport", transport)

    def _update_transport(self, *, request_id: str | _Keep | None = _KEEP, retries_taken: int | None = None,
                          elapsed_s: float | None = None, served_by: str | None = None) -> None:
        """Replace some of the transport facts (the others are kept)."""
        old_id, old_retries, old_elapsed, old_served = self._transport
        object.__setattr__(self, "_hs_transport", (
            old_id if isinstance(request_id, _Keep) else request_id,
            old_retries if retries_taken is None else retries_taken,
            old_elapsed if elapsed_s is None else elapsed_s,
            old_served if served_by is None else served_by))

    def __copy__(self) -> Any:
        new = super().__copy__()
        new._set_transport(self._transport)  # immutable: shared
        return new

    def __deepcopy__(self, memo: dict[int, object] | None = None) -> Any:
        new = super().__deepcopy__(memo)
        new._set_transport(self._transport)
        return new

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["__holysheep_transport__"] = self._transport
        return state

    def __setstate__(self, state: dict[object, Any]) -> None:
        state = dict(state)
        facts = state.pop("__holysheep_transport__", None)
        super().__setstate__(state)
        if facts is not None:
            self._set_transport(tuple(facts))

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id`` for this response (quote it to support)."""
        return self._transport[0]

    @property
    def _request_id(self) -> str | None:
        """openai-python's name for `request_id`."""
        return self._transport[0]

    @property
    def retries_taken(self) -> int:
        """How many retries the call needed before this response (0 when the first attempt worked)."""
        return self._transport[1]

    @property
    def elapsed_s(self) -> float:
        """Seconds from sending the request (final attempt) to the full response body."""
        return self._transport[2]

    @property
    def served_by(self) -> str:
        """``"primary"``, the name of the fallback endpoint that served the request, or ``"cache"``."""
        return self._transport[3]

    @property
    def cached(self) -> bool:
        """True when this response came from a response cache (``cache=``): no request was sent for it."""
        return self._transport[3] == "cache"


class ChatCompletion(_ResponseMeta):
    """A chat completion (``object == "chat.completion"``)."""

    id: str = ""
    choices: list[Choice] = []
    created: int = 0
    model: str = ""
    object: str = "chat.completion"
    metadata: Annotated[dict[str, Any] | None, BeforeValidator(object_or_none)] = None
    moderation: Annotated[dict[str, Any] | None, BeforeValidator(object_or_none)] = None
    """OpenAI's moderation results, as JSON."""
    service_tier: str | None = None
    system_fingerprint: str | None = None
    usage: CompletionUsage | None = None

    @property
    def cost(self) -> float | None:
        """Price of this call in USD from the price catalog, or None when the model has no known price."""
        usage = self.usage
        if usage is None:
            return None
        details = usage.prompt_tokens_details
        cached = details.cached_tokens if details is not None else None
        return _completion_cost()(self.model, usage.prompt_tokens, usage.completion_tokens, cached or 0)


class ChoiceDeltaFunction(HolySheepModel):
    """A fragment of a streamed tool call's function."""

    _openai_name = "ChoiceDeltaToolCallFunction"

    arguments: str | None = None
    name: str | None = None


class ChoiceDeltaToolCall(HolySheepModel):
    """A fragment of a streamed tool call; fragments with the same ``index`` concatenate."""

    index: int = 0
    id: str | None = None
    function: ChoiceDeltaFunction | None = None
    type: str | None = None


class ChoiceDelta(HolySheepModel):
    """What one streamed chunk adds to a choice."""

    _shown_if_sent = frozenset({"reasoning_content"})

    audio: Annotated[ChoiceDeltaAudio | None, BeforeValidator(object_or_none)] = None
    content: str | None = None
    function_call: Annotated[ChoiceDeltaFunctionCall | None, BeforeValidator(object_or_none)] = None
    refusal: str | None = None
    role: str | None = None
    tool_calls: list[ChoiceDeltaToolCall] | None = None
    reasoning_content: str | None = None
    """A piece of the model's reasoning (DeepSeek-style servers)."""


class ChunkChoice(HolySheepModel):
    """One choice's delta in a streamed chunk (openai-python's ``chat_completion_chunk.Choice``)."""

    _openai_name = "Choice"

    delta: ChoiceDelta = ChoiceDelta()
    index: int = 0
    finish_reason: str | None = None
    logprobs: Annotated[ChoiceLogprobs | None, BeforeValidator(object_or_none)] = None


class ChatCompletionChunk(HolySheepModel):
    """One streamed event (``object == "chat.completion.chunk"``); ``choices`` may be empty."""

    id: str = ""
    choices: list[ChunkChoice] = []
    created: int = 0
    model: str = ""
    object: str = "chat.completion.chunk"
    moderation: Annotated[dict[str, Any] | None, BeforeValidator(object_or_none)] = None
    obfuscation: str | None = None
    service_tier: str | None = None
    system_fingerprint: str | None = None
    usage: CompletionUsage | None = None

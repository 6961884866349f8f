"""The Responses API's types (``client.responses``), with openai-python's names and fields.

`Response` is what ``responses.create`` returns (``output_text`` joins its text); the ``Response*Event`` classes
are the events of ``stream=True`` and ``responses.stream(...)``. Unknown fields and item types a server sends are
kept (``model_extra``), as for every holysheep type.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeVar, Union

from pydantic import field_validator

from holysheep.types._base import HolySheepModel, sum_counts
from holysheep.types.chat import _completion_cost, _ResponseMeta

__all__ = [
    "ParsedResponse", "Response", "ResponseCompletedEvent", "ResponseContentPartAddedEvent",
    "ResponseContentPartDoneEvent", "ResponseCreatedEvent", "ResponseError", "ResponseErrorEvent",
    "ResponseFailedEvent", "ResponseFunctionCallArgumentsDeltaEvent", "ResponseFunctionCallArgumentsDoneEvent",
    "ResponseFunctionToolCall", "ResponseInProgressEvent", "ResponseIncompleteEvent", "ResponseOutputItem",
    "ResponseOutputItemAddedEvent", "ResponseOutputItemDoneEvent", "ResponseOutputMessage", "ResponseOutputRefusal",
    "ResponseOutputText", "ResponseRefusalDeltaEvent", "ResponseRefusalDoneEvent", "ResponseStreamEvent",
    "ResponseTextDeltaEvent", "ResponseTextDoneEvent", "ResponseUsage", "event_type",
]

_T = TypeVar("_T")
_Value = object  # (a class with a field named ``object`` cannot name the builtin in its annotations)


class ResponseOutputText(HolySheepModel):
    """A text part of an output message."""

    type: Literal["output_text"] = "output_text"
    text: str = ""
    annotations: list[object] = []


class ResponseOutputRefusal(HolySheepModel):
    """A refusal part of an output message."""

    type: Literal["refusal"] = "refusal"
    refusal: str = ""


class ResponseOutputMessage(HolySheepModel):
    """An assistant message among a response's ``output`` items."""

    id: str = ""
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    status: str | None = None
    content: list[Union[ResponseOutputText, ResponseOutputRefusal]] = []


class ResponseFunctionToolCall(HolySheepModel):
    """A function call the model asks for (answer it with a ``function_call_output`` input item)."""

    type: Literal["function_call"] = "function_call"
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    id: str | None = None
    status: str | None = None


class ResponseOtherItem(HolySheepModel):
    """An output item of another type (reasoning, a built-in tool's call, ...), kept as the server sent it."""

    type: str = ""
    id: str | None = None


ResponseOutputItem = Union[ResponseOutputMessage, ResponseFunctionToolCall, ResponseOtherItem]
"""One item of ``Response.output``."""


def _zero_for_null(value: object) -> object:
    """A count a server sent as ``null`` (the LiteLLM proxy does, for what it did not count) is 0."""
    return 0 if value is None else value


class InputTokensDetails(HolySheepModel):
    cached_tokens: int = 0

    _null_is_zero = field_validator("cached_tokens", mode="before")(_zero_for_null)


class OutputTokensDetails(HolySheepModel):
    reasoning_tokens: int = 0

    _null_is_zero = field_validator("reasoning_tokens", mode="before")(_zero_for_null)


class ResponseUsage(HolySheepModel):
    """Tokens billed for a response (``input_tokens_details.cached_tokens`` came from the prompt cache)."""

    input_tokens: int = 0
    input_tokens_details: InputTokensDetails | None = None
    output_tokens: int = 0
    output_tokens_details: OutputTokensDetails | None = None
    total_tokens: int = 0

    _null_is_zero = field_validator("input_tokens", "output_tokens", "total_tokens", mode="before")(_zero_for_null)

    def __add__(self, other: object) -> ResponseUsage:
        """Two usages added up (the requests of one tool loop): ``input_tokens``, ``output_tokens``,
        ``total_tokens`` (a usage without one counts input + output) and the ``input_tokens_details``/
        ``output_tokens_details`` counts (None where neither has them)."""
        if not isinstance(other, ResponseUsage):
            return NotImplemented
        total = sum(u.total_tokens or u.input_tokens + u.output_tokens for u in (self, other))
        return sum_counts(ResponseUsage, (self, other), total_tokens=total)


class IncompleteDetails(HolySheepModel):
    """Why a response is incomplete (``max_output_tokens``, ``content_filter``)."""

    reason: str | None = None


class ResponseError(HolySheepModel):
    """Why a response failed (``status == "failed"``)."""

    code: str | None = None
    message: str = ""


class Response(_ResponseMeta):
    """A model response (``object == "response"``): ``output`` items, ``output_text``, ``usage``."""

    id: str = ""
    object: str = "response"
    created_at: float = 0
    status: str | None = None
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | list[_Value] | None = None
    model: str = ""
    output: list[ResponseOutputItem] = []
    usage: ResponseUsage | None = None
    previous_response_id: str | None = None
    max_output_tokens: int | None = None
    parallel_tool_calls: bool = True
    temperature: float | None = None
    top_p: float | None = None
    tool_choice: _Value = "auto"
    tools: list[_Value] = []
    text: _Value = None
    metadata: dict[str, str] | None = None

    @property
    def output_text(self) -> str:
        """The text of every ``output_text`` part of every output message, joined ("" when there is none)."""
        return "".join(part.text for item in self.output if isinstance(item, ResponseOutputMessage)
                       for part in item.content if isinstance(part, ResponseOutputText))

    @property
    def cost(self) -> float | None:
        """Price of this call in USD from the price catalog, or None when the model has no known price."""
        usage = self.usage
        if usage is None:
            return None
        cached = usage.input_tokens_details.cached_tokens if usage.input_tokens_details is not None else 0
        return _completion_cost()(self.model, usage.input_tokens, usage.output_tokens, cached)


class ParsedResponse(Response, Generic[_T]):
    """A `Response` whose text was validated as ``text_format`` (``responses.parse``): ``output_parsed``."""

    output_parsed: _T | None = None


# ------------------------------------------------------------------------------------------- stream events
class _Event(HolySheepModel):
    type: str = ""
    sequence_number: int = 0


class ResponseCreatedEvent(_Event):
    type: Literal["response.created"] = "response.created"
    response: Response


class ResponseInProgressEvent(_Event):
    type: Literal["response.in_progress"] = "response.in_progress"
    response: Response


class ResponseCompletedEvent(_Event):
    type: Literal["response.completed"] = "response.completed"
    response: Response


class ResponseIncompleteEvent(_Event):
    type: Literal["response.incomplete"] = "response.incomplete"
    response: Response


class ResponseFailedEvent(_Event):
    type: Literal["response.failed"] = "response.failed"
    response: Response


class ResponseOutputItemAddedEvent(_Event):
    type: Literal["response.output_item.added"] = "response.output_item.added"
    output_index: int = 0
    item: ResponseOutputItem = ResponseOtherItem()


class ResponseOutputItemDoneEvent(_Event):
    type: Literal["response.output_item.done"] = "response.output_item.done"
    output_index: int = 0
    item: ResponseOutputItem = ResponseOtherItem()


class ResponseContentPartAddedEvent(_Event):
    type: Literal["response.content_part.added"] = "response.content_part.added"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    part: Union[ResponseOutputText, ResponseOutputRefusal] = ResponseOutputText()


class ResponseContentPartDoneEvent(_Event):
    type: Literal["response.content_part.done"] = "response.content_part.done"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    part: Union[ResponseOutputText, ResponseOutputRefusal] = ResponseOutputText()


class ResponseTextDeltaEvent(_Event):
    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    delta: str = ""


class ResponseTextDoneEvent(_Event):
    type: Literal["response.output_text.done"] = "response.output_text.done"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    text: str = ""


class ResponseRefusalDeltaEvent(_Event):
    type: Literal["response.refusal.delta"] = "response.refusal.delta"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    delta: str = ""


class ResponseRefusalDoneEvent(_Event):
    type: Literal["response.refusal.done"] = "response.refusal.done"
    item_id: str = ""
    output_index: int = 0
    content_index: int = 0
    refusal: str = ""


class ResponseFunctionCallArgumentsDeltaEvent(_Event):
    type: Literal["response.function_call_arguments.delta"] = "response.function_call_arguments.delta"
    item_id: str = ""
    output_index: int = 0
    delta: str = ""


class ResponseFunctionCallArgumentsDoneEvent(_Event):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    item_id: str = ""
    output_index: int = 0
    name: str | None = None
    arguments: str = ""


class ResponseErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str | None = None
    message: str = ""
    param: str | None = None


class ResponseOtherEvent(_Event):
    """An event of a type this SDK does not model (reasoning summaries, built-in tools, ...), kept as sent."""


ResponseStreamEvent = Union[
    ResponseCreatedEvent, ResponseInProgressEvent, ResponseCompletedEvent, ResponseIncompleteEvent,
    ResponseFailedEvent, ResponseOutputItemAddedEvent, ResponseOutputItemDoneEvent, ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent, ResponseTextDeltaEvent, ResponseTextDoneEvent, ResponseRefusalDeltaEvent,
    ResponseRefusalDoneEvent, ResponseFunctionCallArgumentsDeltaEvent, ResponseFunctionCallArgumentsDoneEvent,
    ResponseErrorEvent, ResponseOtherEvent]
"""One event of a streamed response (``event.type`` says which)."""

_EVENTS: dict[str, type[_Event]] = {
    cls.model_fields["type"].default: cls for cls in (
        ResponseCreatedEvent, ResponseInProgressEvent, ResponseCompletedEvent, ResponseIncompleteEvent,
        ResponseFailedEvent, ResponseOutputItemAddedEvent, ResponseOutputItemDoneEvent,
        ResponseContentPartAddedEvent, ResponseContentPartDoneEvent, ResponseTextDeltaEvent, ResponseTextDoneEvent,
        ResponseRefusalDeltaEvent, ResponseRefusalDoneEvent, ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionCallArgumentsDoneEvent, ResponseErrorEvent)}


def event_type(kind: str) -> type[_Event]:
    """The event class of an event ``type`` (`ResponseOtherEvent` for one this SDK does not model)."""
    return _EVENTS.get(kind, ResponseOtherEvent)

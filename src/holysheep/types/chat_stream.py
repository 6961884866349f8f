"""The typed events of ``client.chat.completions.stream(...)``: openai-python's names and fields."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar, Union

from ._base import HolySheepModel
from .chat import ChatCompletion, ChatCompletionChunk

__all__ = [
    "ChatCompletionStreamEvent",
    "ChunkEvent",
    "ContentDeltaEvent",
    "ContentDoneEvent",
    "FunctionToolCallArgumentsDeltaEvent",
    "FunctionToolCallArgumentsDoneEvent",
    "LogprobsContentDeltaEvent",
    "LogprobsContentDoneEvent",
    "LogprobsRefusalDeltaEvent",
    "LogprobsRefusalDoneEvent",
    "ReasoningDeltaEvent",
    "ReasoningDoneEvent",
    "RefusalDeltaEvent",
    "RefusalDoneEvent",
]

ResponseFormatT = TypeVar("ResponseFormatT")


class ChunkEvent(HolySheepModel):
    """Every chunk, as it arrives, with the completion folded so far (``snapshot``)."""

    type: Literal["chunk"] = "chunk"
    chunk: ChatCompletionChunk
    snapshot: ChatCompletion


class ContentDeltaEvent(HolySheepModel):
    """A chunk with ``delta.content``: the new text, all the text so far, and (with ``response_format=Model``)
    the partial JSON parsed so far."""

    type: Literal["content.delta"] = "content.delta"
    delta: str
    snapshot: str
    parsed: Any = None


class ContentDoneEvent(HolySheepModel, Generic[ResponseFormatT]):
    """The content is complete (``parsed``: validated as the ``response_format`` model, when one was given)."""

    type: Literal["content.done"] = "content.done"
    content: str
    parsed: ResponseFormatT | None = None


class RefusalDeltaEvent(HolySheepModel):
    """A chunk with ``delta.refusal``."""

    type: Literal["refusal.delta"] = "refusal.delta"
    delta: str
    snapshot: str


class RefusalDoneEvent(HolySheepModel):
    """The refusal is complete."""

    type: Literal["refusal.done"] = "refusal.done"
    refusal: str


class ReasoningDeltaEvent(HolySheepModel):
    """A chunk with ``delta.reasoning_content`` (DeepSeek-style reasoning servers; not an openai event)."""

    type: Literal["reasoning.delta"] = "reasoning.delta"
    delta: str
    snapshot: str


class ReasoningDoneEvent(HolySheepModel):
    """The reasoning is complete (not an openai event)."""

    type: Literal["reasoning.done"] = "reasoning.done"
    reasoning_content: str


class FunctionToolCallArgumentsDeltaEvent(HolySheepModel):
    """A piece of a tool call's JSON arguments: ``arguments`` so far, ``arguments_delta`` the new piece,
    ``parsed_arguments`` the partial JSON parsed so far (strict tools)."""

    type: Literal["tool_calls.function.arguments.delta"] = "tool_calls.function.arguments.delta"
    name: str
    index: int
    arguments: str
    parsed_arguments: Any = None
    arguments_delta: str


class FunctionToolCallArgumentsDoneEvent(HolySheepModel):
    """A tool call's arguments are complete (``parsed_arguments``: decoded for strict tools)."""

    type: Literal["tool_calls.function.arguments.done"] = "tool_calls.function.arguments.done"
    name: str
    index: int
    arguments: str
    parsed_arguments: Any = None


class LogprobsContentDeltaEvent(HolySheepModel):
    """Log probabilities of new content tokens (``snapshot``: all so far)."""

    type: Literal["logprobs.content.delta"] = "logprobs.content.delta"
    content: list[Any]
    snapshot: list[Any]


class LogprobsContentDoneEvent(HolySheepModel):
    """All content-token log probabilities."""

    type: Literal["logprobs.content.done"] = "logprobs.content.done"
    content: list[Any]


class LogprobsRefusalDeltaEvent(HolySheepModel):
    """Log probabilities of new refusal tokens."""

    type: Literal["logprobs.refusal.delta"] = "logprobs.refusal.delta"
    refusal: list[Any]
    snapshot: list[Any]


class LogprobsRefusalDoneEvent(HolySheepModel):
    """All refusal-token log probabilities."""

    type: Literal["logprobs.refusal.done"] = "logprobs.refusal.done"
    refusal: list[Any]


ChatCompletionStreamEvent = Union[
    ChunkEvent,
    ContentDeltaEvent,
    ContentDoneEvent[ResponseFormatT],
    RefusalDeltaEvent,
    RefusalDoneEvent,
    ReasoningDeltaEvent,
    ReasoningDoneEvent,
    FunctionToolCallArgumentsDeltaEvent,
    FunctionToolCallArgumentsDoneEvent,
    LogprobsContentDeltaEvent,
    LogprobsContentDoneEvent,
    LogprobsRefusalDeltaEvent,
    LogprobsRefusalDoneEvent,
]
"""One event of a chat completion stream (dispatch on ``event.type``)."""

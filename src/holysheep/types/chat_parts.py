"""The smaller parts of a chat completion that openai-python declares: annotations, audio, the legacy
``function_call`` and log probabilities. Each has openai's fields and defaults; unknown fields are kept."""

from __future__ import annotations

from typing import Any

from holysheep.types._base import HolySheepModel

__all__ = [
    "Annotation",
    "AnnotationURLCitation",
    "ChatCompletionAudio",
    "ChatCompletionTokenLogprob",
    "ChoiceDeltaAudio",
    "ChoiceDeltaFunctionCall",
    "ChoiceLogprobs",
    "TopLogprob",
    "object_or_none",
    "objects_or_none",
]


def object_or_none(value: object) -> Any:
    """A JSON object as it is; anything else (an odd server's scalar or list) dropped to ``None``."""
    return value if value is None or isinstance(value, dict) else None


def objects_or_none(value: object) -> Any:
    """A list of JSON objects as it is; anything else dropped to ``None`` (the optional parts openai declares
    must not make an odd server's whole reply fail validation)."""
    return value if isinstance(value, list) and all(isinstance(v, dict) for v in value) else None


class AnnotationURLCitation(HolySheepModel):
    """A URL the reply cites (web search), with the span of the reply that cites it."""

    end_index: int = 0
    start_index: int = 0
    title: str = ""
    url: str = ""


class Annotation(HolySheepModel):
    """An annotation of the reply (``type == "url_citation"``)."""

    type: str = "url_citation"
    url_citation: AnnotationURLCitation | None = None


class ChatCompletionAudio(HolySheepModel):
    """The audio of a reply requested with ``modalities=["audio"]`` (``data``: base64)."""

    id: str = ""
    data: str = ""
    expires_at: int = 0
    transcript: str = ""


class ChoiceDeltaAudio(HolySheepModel):
    """A piece of a streamed audio reply."""

    id: str | None = None
    data: str | None = None
    expires_at: int | None = None
    transcript: str | None = None


class ChoiceDeltaFunctionCall(HolySheepModel):
    """A piece of the legacy ``function_call`` (superseded by ``tool_calls``)."""

    arguments: str | None = None
    name: str | None = None


class TopLogprob(HolySheepModel):
    """One of the most likely tokens at a position."""

    token: str = ""
    bytes: list[int] | None = None
    logprob: float = 0.0


class ChatCompletionTokenLogprob(HolySheepModel):
    """A token of the reply with its log probability and the most likely alternatives."""

    token: str = ""
    bytes: list[int] | None = None
    logprob: float = 0.0
    top_logprobs: list[TopLogprob] = []


class ChoiceLogprobs(HolySheepModel):
    """Log probabilities of a choice's content tokens and refusal tokens (``logprobs=True``)."""

    content: list[ChatCompletionTokenLogprob] | None = None
    refusal: list[ChatCompletionTokenLogprob] | None = None

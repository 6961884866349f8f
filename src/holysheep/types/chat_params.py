"""openai-python's chat request parameters (``openai.types.chat``) under the same names, so that code typed with
them type-checks against holysheep after changing only the import path: the message ``TypedDict``s per role, their
content parts, tools, tool calls and tool choices. ``holysheep.types.chat`` re-exports them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias, Union

from typing_extensions import Required, TypedDict

from holysheep.types.shared_params import FunctionDefinition

__all__ = [
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
    "OpenAIMessageParam",
]


class ChatCompletionContentPartTextParam(TypedDict, total=False):
    """A text part: ``{"type": "text", "text": "..."}``."""

    text: Required[str]
    type: Required[Literal["text"]]


class ImageURL(TypedDict, total=False):
    """An image's URL (or ``data:`` URL) and the detail to see it in."""

    url: Required[str]
    detail: Literal["auto", "low", "high", "original"]


class ChatCompletionContentPartImageParam(TypedDict, total=False):
    """An image part: ``{"type": "image_url", "image_url": {"url": "..."}}``."""

    image_url: Required[ImageURL]
    type: Required[Literal["image_url"]]


class InputAudio(TypedDict, total=False):
    """Base64 audio and its format."""

    data: Required[str]
    format: Required[Literal["wav", "mp3"]]


class ChatCompletionContentPartInputAudioParam(TypedDict, total=False):
    """An audio part: ``{"type": "input_audio", "input_audio": {...}}``."""

    input_audio: Required[InputAudio]
    type: Required[Literal["input_audio"]]


class FileFile(TypedDict, total=False):
    """A file's data (base64), id or name."""

    file_data: str
    file_id: str
    filename: str


class File(TypedDict, total=False):
    """A file part: ``{"type": "file", "file": {...}}``."""

    file: Required[FileFile]
    type: Required[Literal["file"]]


class ChatCompletionContentPartRefusalParam(TypedDict, total=False):
    """A refusal part of an assistant message."""

    refusal: Required[str]
    type: Required[Literal["refusal"]]


ChatCompletionContentPartParam: TypeAlias = Union[ChatCompletionContentPartTextParam,
                                                  ChatCompletionContentPartImageParam,
                                                  ChatCompletionContentPartInputAudioParam, File]


class ChatCompletionDeveloperMessageParam(TypedDict, total=False):
    """``{"role": "developer", "content": "..."}``."""

    content: Required[Union[str, Iterable[ChatCompletionContentPartTextParam]]]
    role: Required[Literal["developer"]]
    name: str


class ChatCompletionSystemMessageParam(TypedDict, total=False):
    """``{"role": "system", "content": "..."}``."""

    content: Required[Union[str, Iterable[ChatCompletionContentPartTextParam]]]
    role: Required[Literal["system"]]
    name: str


class ChatCompletionUserMessageParam(TypedDict, total=False):
    """``{"role": "user", "content": "..." or [parts]}``."""

    content: Required[Union[str, Iterable[ChatCompletionContentPartParam]]]
    role: Required[Literal["user"]]
    name: str


class Function(TypedDict, total=False):
    """The function a tool call invokes, with its JSON-encoded arguments."""

    arguments: Required[str]
    name: Required[str]


class ChatCompletionMessageFunctionToolCallParam(TypedDict, total=False):
    """A tool call of an assistant message sent back: ``{"id": ..., "type": "function", "function": {...}}``."""

    id: Required[str]
    function: Required[Function]
    type: Required[Literal["function"]]


ChatCompletionMessageToolCallParam: TypeAlias = ChatCompletionMessageFunctionToolCallParam


class Audio(TypedDict, total=False):
    """A previous audio reply, by id."""

    id: Required[str]


class FunctionCall(TypedDict, total=False):
    """The legacy ``function_call`` of an assistant message."""

    arguments: Required[str]
    name: Required[str]


class ChatCompletionAssistantMessageParam(TypedDict, total=False):
    """An assistant message sent back (with its ``tool_calls``); ``reasoning_content`` is holysheep's, for servers
    that take the reasoning back (DeepSeek-style)."""

    role: Required[Literal["assistant"]]
    audio: Audio | None
    content: Union[str, Iterable[Union[ChatCompletionContentPartTextParam, ChatCompletionContentPartRefusalParam]],
                   None]
    function_call: FunctionCall | None
    name: str
    refusal: str | None
    tool_calls: Iterable[ChatCompletionMessageFunctionToolCallParam]
    reasoning_content: str | None


class ChatCompletionToolMessageParam(TypedDict, total=False):
    """A tool's result: ``{"role": "tool", "tool_call_id": call.id, "content": "..."}``."""

    content: Required[Union[str, Iterable[ChatCompletionContentPartTextParam]]]
    role: Required[Literal["tool"]]
    tool_call_id: Required[str]


class ChatCompletionFunctionMessageParam(TypedDict, total=False):
    """The legacy function result message."""

    content: Required[str | None]
    name: Required[str]
    role: Required[Literal["function"]]


OpenAIMessageParam: TypeAlias = Union[
    ChatCompletionDeveloperMessageParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionUserMessageParam,
    ChatCompletionAssistantMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionFunctionMessageParam,
]
"""openai-python's ``ChatCompletionMessageParam``: one message ``TypedDict`` per role."""


class ChatCompletionFunctionToolParam(TypedDict, total=False):
    """A function tool: ``{"type": "function", "function": {"name": ..., "parameters": {...}}}``."""

    function: Required[FunctionDefinition]
    type: Required[Literal["function"]]


ChatCompletionToolParam: TypeAlias = ChatCompletionFunctionToolParam


class NamedFunction(TypedDict, total=False):
    """The function a named tool choice forces."""

    name: Required[str]


class ChatCompletionNamedToolChoiceParam(TypedDict, total=False):
    """``tool_choice={"type": "function", "function": {"name": ...}}``: call this function."""

    function: Required[NamedFunction]
    type: Required[Literal["function"]]


ChatCompletionToolChoiceOptionParam: TypeAlias = Union[Literal["none", "auto", "required"],
                                                       ChatCompletionNamedToolChoiceParam]


class ChatCompletionStreamOptionsParam(TypedDict, total=False):
    """``stream_options={"include_usage": True}``."""

    include_obfuscation: bool
    include_usage: bool

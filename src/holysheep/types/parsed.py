"""Parsed chat completions: ``choices[i].message.parsed`` holds the validated ``T`` (``chat.completions.parse``)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import typing_extensions
from pydantic import PrivateAttr

from holysheep.types.chat import ChatCompletion, ChatCompletionMessage, Choice, Function, ToolCall

__all__ = ["ParsedChatCompletion", "ParsedChatCompletionMessage", "ParsedChoice", "ParsedFunction",
           "ParsedFunctionToolCall"]

ContentT = TypeVar("ContentT")


_RESPONSE_FORMAT_T = vars(typing_extensions)["TypeVar"]("ResponseFormatT", default=None)
"""openai-python's type parameter of its parsed objects (a ``typing_extensions.TypeVar`` with a default), held as
a value: only its printed name is used."""


def _openai_parameter() -> str:
    """How openai-python's parsed objects print their type parameter: pydantic names a generic class parametrized
    with ``ResponseFormatT`` (``[~ResponseFormatT]`` on Python 3.12 and before, ``[TypeVar]`` on 3.13), so the name
    is made the same way."""
    from pydantic import BaseModel

    class Parsed(BaseModel, Generic[ContentT]):
        pass

    return Parsed.model_parametrized_name((_RESPONSE_FORMAT_T,))[len("Parsed"):]


_PARAMETER = _openai_parameter()


class ParsedFunction(Function):
    """A tool call's function with ``parsed_arguments``: the arguments as the tool's pydantic model (``None``
    for a raw tool dict, whose arguments stay a JSON string in ``arguments``)."""

    parsed_arguments: Any = None


class ParsedFunctionToolCall(ToolCall):
    """A tool call whose ``function`` carries ``parsed_arguments``."""

    _openai_name = "ParsedFunctionToolCall"

    function: ParsedFunction


class ParsedChatCompletionMessage(ChatCompletionMessage, Generic[ContentT]):
    """The assistant's message with ``parsed``: the reply validated as ``ContentT`` (``None`` when the
    choice has no content, e.g. a tool call, or when ``parse`` got tools and no ``response_format``), and
    ``tool_calls[i].function.parsed_arguments``."""

    _openai_name = f"ParsedChatCompletionMessage{_PARAMETER}"  # as openai-python prints its parsed objects

    parsed: ContentT | None = None
    tool_calls: list[ParsedFunctionToolCall] | None = None  # type: ignore[assignment]  # narrower: parsed


class ParsedChoice(Choice, Generic[ContentT]):
    """A choice whose ``message`` carries ``parsed``."""

    _openai_name = f"ParsedChoice{_PARAMETER}"  # as openai-python prints its parsed objects

    message: ParsedChatCompletionMessage[ContentT]


class ParsedChatCompletion(ChatCompletion, Generic[ContentT]):
    """A chat completion whose choices carry ``message.parsed``.

    ``usage`` (and so ``cost``) counts every request sent for it: with ``max_repairs`` the first answer
    and each re-ask. ``repairs`` says how many re-asks were needed; ``attempts`` holds each raw response.
    """

    _openai_name = f"ParsedChatCompletion{_PARAMETER}"  # as openai-python prints its parsed objects

    choices: list[ParsedChoice[ContentT]] = []  # type: ignore[assignment]  # narrower: each choice is parsed
    _attempts: list[ChatCompletion] = PrivateAttr(default_factory=list)

    @property
    def repairs(self) -> int:
        """How many re-asks it took to get valid output (0 when the first answer validated)."""
        return max(0, len(self._attempts) - 1)

    @property
    def attempts(self) -> list[ChatCompletion]:
        """The raw response of every request sent (first answer, then each re-ask)."""
        return list(self._attempts)

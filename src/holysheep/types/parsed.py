"""Parsed chat completions: ``choices[i].message.parsed`` holds the validated ``T`` (``chat.completions.parse``)."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import PrivateAttr

from holysheep.types.chat import ChatCompletion, ChatCompletionMessage, Choice

__all__ = ["ParsedChatCompletion", "ParsedChatCompletionMessage", "ParsedChoice"]

ContentT = TypeVar("ContentT")


class ParsedChatCompletionMessage(ChatCompletionMessage, Generic[ContentT]):
    """The assistant's message with ``parsed``: the reply validated as ``ContentT`` (``None`` when the
    choice has no content, e.g. a tool call)."""

    parsed: ContentT | None = None


class ParsedChoice(Choice, Generic[ContentT]):
    """A choice whose ``message`` carries ``parsed``."""

    message: ParsedChatCompletionMessage[ContentT]


class ParsedChatCompletion(ChatCompletion, Generic[ContentT]):
    """A chat completion whose choices carry ``message.parsed``.

    ``usage`` (and so ``cost``) counts every request sent for it: with ``max_repairs`` the first answer
    and each re-ask. ``repairs`` says how many re-asks were needed; ``attempts`` holds each raw response.
    """

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

"""Errors of tool calling: arguments that do not validate, and a tool loop that did not end.

    APIError
    └── APIResponseValidationError
        └── StructuredOutputError
            └── ToolArgumentsError      a tool call's arguments do not validate (parse(tools=[...]))
    HolySheepError
    └── MaxTurnsError                   run_tools: the model still called tools after max_turns requests
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holysheep._core.structured_errors import StructuredOutputError
from holysheep._exceptions import HolySheepError

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import ValidationError

    from holysheep.types.chat import ChatCompletion

__all__ = ["MaxTurnsError", "ToolArgumentsError"]


class ToolArgumentsError(StructuredOutputError):
    """A tool call's arguments are not valid for its tool (after ``max_repairs`` re-asks, if any).

    ``tool_name``, ``tool_call_id``; ``raw_arguments`` (also ``raw_text``): the arguments as the model sent
    them; ``field``: where the first error is (``"(root)"`` for arguments that are not a JSON object);
    ``validation_error``: pydantic's `ValidationError`; ``completion``: the last response.
    """

    def __init__(self, message: str, *, tool_name: str, tool_call_id: str | None, raw_arguments: str, field: str,
                 validation_error: ValidationError | None, completion: ChatCompletion, attempts: int = 1,
                 **kwargs: object) -> None:
        super().__init__(message, raw_text=raw_arguments, validation_error=validation_error, completion=completion,
                         attempts=attempts, **kwargs)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id
        self.raw_arguments = raw_arguments
        self.field = field


class MaxTurnsError(HolySheepError):
    """``run_tools`` sent ``max_turns`` requests and the model still called tools.

    ``result``: the run so far (a `ToolRunResult`); ``messages``: its transcript; ``tool_calls``: every call
    that ran; ``completion``: the last response (whose tool calls were not run).
    """

    def __init__(self, message: str, *, result: Any) -> None:  # a ToolRunResult (typed loosely: no import circle)
        super().__init__(message)
        self.result = result
        self.messages: list[dict[str, Any]] = result.messages
        self.tool_calls: list[Any] = result.tool_calls
        self.completion: ChatCompletion = result.completion

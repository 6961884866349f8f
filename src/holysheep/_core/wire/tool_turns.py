"""`ToolTurns`: how a tool loop speaks one wire format (sans I/O), and chat completions' own (`CHAT_TOOLS`).

The tool loop (``_core/tool_loop.py``) reads no format's fields: it asks the format's `ToolTurns` for the
conversation a call starts with, the request of each turn, the tool calls a reply asks for, what the reply and
each tool result add to the conversation, and the result of the run. A `WireFormat` hands its own out through
``tool_turns()``; the Responses API's is in ``responses_tools.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel

from holysheep._core.tool_results import ToolCallRecord, ToolRunResult
from holysheep._exceptions import InvalidRequestError
from holysheep.types.chat import ChatCompletion, ToolCall

__all__ = ["CHAT_TOOLS", "ChatToolTurns", "ToolTurns"]

_R = TypeVar("_R")


def _of(kind: type[_R], reply: object) -> _R:
    """``reply``, checked to be the format's reply type (the loop only ever hands a format its own replies)."""
    if not isinstance(reply, kind):
        raise TypeError(f"tool loop: expected a {kind.__name__}, got {type(reply).__name__}")
    return reply


class ToolTurns:
    """One format's side of the tool loop. Subclass it for a format whose replies can call tools."""

    history_field: ClassVar[str] = "messages"
    """The request field the conversation goes in (``messages``, ``input``)."""

    def start(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The conversation the call starts with (its ``history_field``, as dicts)."""
        raise NotImplementedError

    def tool_param(self, tool: Mapping[str, object]) -> Mapping[str, object]:
        """A ``tools=[...]`` entry (chat's ``{"type": "function", "function": {...}}``) as this format sends it."""
        return tool

    def request(self, params: Mapping[str, Any], history: Sequence[Mapping[str, Any]],
                tools: Sequence[Mapping[str, object]]) -> dict[str, Any]:
        """The arguments of one turn's request: the call's own, the conversation so far and the tools."""
        return {**params, self.history_field: list(history), "tools": [self.tool_param(t) for t in tools]}

    def calls(self, reply: object) -> list[ToolCall]:
        """The tool calls a reply asks for, in order (each as an id, a function name and its arguments)."""
        raise NotImplementedError

    def reply_items(self, reply: object) -> list[dict[str, Any]]:
        """What a reply adds to the conversation."""
        raise NotImplementedError

    def result_item(self, call_id: str, result: str) -> dict[str, Any]:
        """What one tool result adds to the conversation (the answer to call ``call_id``)."""
        raise NotImplementedError

    def result(self, final: object, history: list[dict[str, Any]], records: list[ToolCallRecord],
               replies: list[object]) -> object:
        """The run's result: the last reply, the whole conversation, every call and every reply."""
        raise NotImplementedError

    def final(self, result: object) -> object:
        """The reply that ended a run, read from its ``result`` (what a batch item's ``response`` is)."""
        raise NotImplementedError


def _message_dict(message: object) -> dict[str, Any]:
    if isinstance(message, BaseModel):
        out: dict[str, Any] = message.model_dump(exclude_none=True)
        return out
    if isinstance(message, Mapping):
        return dict(message)
    raise InvalidRequestError(f"messages: each message must be a dict or a Message, got {type(message).__name__}.",
                              field="messages")


class ChatToolTurns(ToolTurns):
    """Chat completions: ``messages``; a reply adds its assistant message (choice 0), a result a ``tool``
    message; the run is a `ToolRunResult`."""

    history_field: ClassVar[str] = "messages"

    def start(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [_message_dict(m) for m in params.get("messages", ())]

    def calls(self, reply: object) -> list[ToolCall]:
        assert isinstance(reply, ChatCompletion)
        return list(reply.choices[0].message.tool_calls or ()) if reply.choices else []

    def reply_items(self, reply: object) -> list[dict[str, Any]]:
        assert isinstance(reply, ChatCompletion)
        message = reply.choices[0].message if reply.choices else None
        out: dict[str, Any] = {"role": "assistant", "content": message.content if message else None}
        if message is not None and message.tool_calls:
            out["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                 for c in message.tool_calls]
        return [out]

    def result_item(self, call_id: str, result: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "content": result}

    def result(self, final: object, history: list[dict[str, Any]], records: list[ToolCallRecord],
               replies: list[object]) -> ToolRunResult:
        return ToolRunResult(_of(ChatCompletion, final), history, records, [_of(ChatCompletion, r) for r in replies])

    def final(self, result: object) -> ChatCompletion:
        return _of(ToolRunResult, result).completion


CHAT_TOOLS = ChatToolTurns()
"""Chat completions' side of the tool loop."""

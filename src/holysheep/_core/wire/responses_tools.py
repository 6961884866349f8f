"""The Responses API's side of the tool loop (`RESPONSES_TOOLS`) and its run's result (`ResponseToolRunResult`).

openai's way: the conversation is the ``input`` items; a reply adds its ``output`` items as the server sent them
(``function_call`` items included), each tool result a ``function_call_output`` item
(``{"type": "function_call_output", "call_id": ..., "output": ...}``); every turn sends the whole conversation,
so it works on servers that keep no state and through the bridge to chat completions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from holysheep._core.tool_results import ToolCallRecord
from holysheep._core.wire.tool_turns import ToolTurns, _of
from holysheep._exceptions import InvalidRequestError
from holysheep.types._base import sum_usages
from holysheep.types.chat import Function, ToolCall
from holysheep.types.responses import Response, ResponseFunctionToolCall, ResponseUsage

__all__ = ["RESPONSES_TOOLS", "ResponseToolRunResult", "ResponsesToolTurns"]


@dataclass
class ResponseToolRunResult:
    """The result of ``responses.run_tools``: the ``response`` that answered without function calls, the whole
    ``input`` conversation (the call's input items, every reply's output items and every ``function_call_output``),
    every ``tool_calls`` record, and ``responses`` (one per request). ``usage`` and ``cost`` count every request.
    ``messages`` and ``completion`` name ``input`` and ``response`` as chat's `ToolRunResult` does."""

    response: Response
    input: list[dict[str, Any]]
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    responses: list[Response] = field(default_factory=list)

    @property
    def output_text(self) -> str:
        """The final answer's text."""
        return self.response.output_text

    @property
    def content(self) -> str | None:
        """The final answer's text (None without text), as chat's ``ToolRunResult.content``."""
        return self.response.output_text or None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """``input`` (chat's name: what `MaxTurnsError.messages` holds)."""
        return self.input

    @property
    def completion(self) -> Response:
        """``response`` (chat's name: what `MaxTurnsError.completion` holds)."""
        return self.response

    @property
    def turns(self) -> int:
        """How many requests were sent to the model."""
        return len(self.responses)

    @property
    def usage(self) -> ResponseUsage | None:
        """Tokens summed over every request of the run as the Responses API sums them (`ResponseUsage`'s ``+``,
        also `ResponsesWire.sum_usage`'s): the counts and the ``input_tokens_details``/``output_tokens_details``
        counts."""
        return sum_usages(r.usage for r in self.responses)

    @property
    def cost(self) -> float | None:
        """USD summed over every request (None when no request has a known price)."""
        known = [r.cost for r in self.responses if r.cost is not None]
        return sum(known) if known else None


def _item(value: Any, index: int) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        out: dict[str, Any] = value.model_dump(mode="json", exclude_none=True)
        return out
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidRequestError(f"input[{index}]: an input item must be a dict, got {type(value).__name__}.",
                              field=f"input[{index}]")


class ResponsesToolTurns(ToolTurns):
    """The Responses API: ``input`` items; function tools flat (``{"type": "function", "name": ...}``)."""

    history_field: ClassVar[str] = "input"

    def start(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        value = params.get("input")
        if isinstance(value, str):
            return [{"role": "user", "content": value}]
        if value is None:
            return []
        if not isinstance(value, (list, tuple)):
            raise InvalidRequestError(f"input: must be a string or a list of input items, got "
                                      f"{type(value).__name__}.", field="input")
        return [_item(v, i) for i, v in enumerate(value)]

    def tool_param(self, tool: Mapping[str, object]) -> Mapping[str, object]:
        function = tool.get("function")
        if tool.get("type") != "function" or not isinstance(function, Mapping):
            return tool  # already the Responses API's shape (or a built-in tool)
        return {"type": "function", **{k: function[k] for k in ("name", "description", "parameters", "strict")
                                       if k in function}}

    def request(self, params: Mapping[str, Any], history: Sequence[Mapping[str, Any]],
                tools: Sequence[Mapping[str, object]]) -> dict[str, Any]:
        out = super().request(params, history, tools)
        if not history:  # previous_response_id (or a stored prompt) alone: no input items yet
            out.pop("input")
        return out

    def calls(self, reply: object) -> list[ToolCall]:
        assert isinstance(reply, Response)
        return [ToolCall(id=item.call_id, function=Function(name=item.name, arguments=item.arguments))
                for item in reply.output if isinstance(item, ResponseFunctionToolCall)]

    def reply_items(self, reply: object) -> list[dict[str, Any]]:
        assert isinstance(reply, Response)
        return [item.model_dump(mode="json", exclude_none=True) for item in reply.output]

    def result_item(self, call_id: str, result: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": call_id, "output": result}

    def result(self, final: object, history: list[dict[str, Any]], records: list[ToolCallRecord],
               replies: list[object]) -> ResponseToolRunResult:
        return ResponseToolRunResult(_of(Response, final), history, records, [_of(Response, r) for r in replies])

    def final(self, result: object) -> Response:
        return _of(ResponseToolRunResult, result).response


RESPONSES_TOOLS = ResponsesToolTurns()
"""The Responses API's side of the tool loop."""

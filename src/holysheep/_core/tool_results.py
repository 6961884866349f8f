"""What a tool loop gives back: one `ToolCallRecord` per call that ran, and the chat completions run's
`ToolRunResult` (the Responses API's is `ResponseToolRunResult`, in ``_core/wire/responses_tools.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from holysheep.types._base import sum_usages
from holysheep.types.chat import ChatCompletion, CompletionUsage

__all__ = ["ToolCallRecord", "ToolRun", "ToolRunResult"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a run: its ``id``, ``name``, raw ``arguments`` and validated ``parsed_arguments``,
    the handler's ``output``, the ``result`` text the model got, ``error`` (None when it ran fine),
    ``duration_s`` and the ``turn`` (1-based) of the model reply that asked for it."""

    id: str
    name: str
    arguments: str
    parsed_arguments: Any
    output: object
    result: str
    error: str | None
    duration_s: float
    turn: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record (no ``output``/``parsed_arguments`` objects): what a JSONL line carries."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "result": self.result,
                "error": self.error, "duration_s": self.duration_s, "turn": self.turn}


class ToolRun(Protocol):
    """What every format's tool run has (chat's `ToolRunResult`, the Responses API's `ResponseToolRunResult`): the
    transcript and every tool call. A batch result's ``tool_run`` is one (``BatchResult.messages`` reads it)."""

    @property
    def messages(self) -> list[dict[str, object]]:
        """The whole conversation: the input, every reply's turn and every tool result."""
        ...

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """Every tool call that ran, in order."""
        ...


@dataclass
class ToolRunResult:
    """The result of ``run_tools``: the ``completion`` that answered without tool calls, the whole
    ``messages`` transcript (the input, every assistant turn and every ``tool`` result), every
    ``tool_calls`` record, and ``completions`` (one per request). ``usage`` and ``cost`` count every request."""

    completion: ChatCompletion
    messages: list[dict[str, Any]]
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    completions: list[ChatCompletion] = field(default_factory=list)

    @property
    def content(self) -> str | None:
        """The final answer's text (choice 0)."""
        return self.completion.choices[0].message.content if self.completion.choices else None

    @property
    def turns(self) -> int:
        """How many requests were sent to the model."""
        return len(self.completions)

    @property
    def usage(self) -> CompletionUsage | None:
        """Tokens summed over every request of the run as chat completions sum them (`CompletionUsage`'s ``+``,
        also `ChatWire.sum_usage`'s): the counts and every ``*_tokens_details`` count."""
        return sum_usages(c.usage for c in self.completions)

    @property
    def cost(self) -> float | None:
        """USD summed over every request (None when no request has a known price)."""
        costs = [c.cost for c in self.completions]
        known = [c for c in costs if c is not None]
        return sum(known) if known else None

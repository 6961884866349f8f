"""The tool loop, sans I/O: ask the model, run the tools it calls, send their results, until it answers.

`ToolLoop.steps()` is a generator shared by the sync runner, the async runner and the batch engine. It
yields either the ``create()`` keyword arguments of the next request (send it, then ``send()`` the
`ChatCompletion` back) or a `RunTools` (run its calls, then ``send()`` one `ToolOutcome` per call back,
in order). Its return value is the `ToolRunResult`. Each shell only sends and runs.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from holysheep._core.tool_errors import MaxTurnsError
from holysheep._core.tool_limits import DEFAULT_TOOL_TIMEOUT, check_tool_timeout
from holysheep._core.tools import FunctionTool, ToolSet, error_lines
from holysheep._egress import scrub
from holysheep._exceptions import InvalidRequestError
from holysheep.types.chat import ChatCompletion, CompletionUsage, ToolCall

__all__ = ["DEFAULT_MAX_TURNS", "PendingCall", "RunTools", "ToolCallRecord", "ToolLoop", "ToolOutcome",
           "ToolRunResult", "check_max_turns", "plan_tool_loop", "result_text", "timed_out", "wants_tool_loop"]

DEFAULT_MAX_TURNS = 10
"""How many requests a tool loop may send when ``max_turns`` is not given."""



@dataclass(frozen=True)
class PendingCall:
    """One tool call to run: the typed ``tool`` and its validated ``arguments``, or ``error`` (an unknown
    tool, arguments that do not validate, a tool without a handler), which is sent back as its result."""

    call: ToolCall
    tool: FunctionTool | None
    arguments: BaseModel | None
    error: str | None = None

    @property
    def id(self) -> str:
        return self.call.id or ""

    @property
    def name(self) -> str:
        return self.call.function.name or ""


@dataclass(frozen=True)
class RunTools:
    """Run these calls (concurrently), then send back one `ToolOutcome` per call, in order. A call still running
    ``timeout`` seconds after the turn's calls started is given up (`timed_out`); None: no limit."""

    calls: list[PendingCall]
    turn: int
    timeout: float | None = DEFAULT_TOOL_TIMEOUT


@dataclass(frozen=True)
class ToolOutcome:
    """What running one call gave: ``result`` (the text sent to the model), the handler's return value
    (``output``), ``error`` (the error text when it raised or could not run) and ``duration_s``."""

    result: str
    output: Any = None
    error: str | None = None
    duration_s: float = 0.0

    def __post_init__(self) -> None:  # the egress scrubber: a key a tool returned never reaches the model
        object.__setattr__(self, "result", scrub(self.result))
        if self.error is not None:
            object.__setattr__(self, "error", scrub(self.error))


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a run: its ``id``, ``name``, raw ``arguments`` and validated ``parsed_arguments``,
    the handler's ``output``, the ``result`` text the model got, ``error`` (None when it ran fine),
    ``duration_s`` and the ``turn`` (1-based) of the model reply that asked for it."""

    id: str
    name: str
    arguments: str
    parsed_arguments: Any
    output: Any
    result: str
    error: str | None
    duration_s: float
    turn: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record (no ``output``/``parsed_arguments`` objects): what a JSONL line carries."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "result": self.result,
                "error": self.error, "duration_s": self.duration_s, "turn": self.turn}


def _sum_usage(completions: Iterable[ChatCompletion]) -> CompletionUsage | None:
    usages = [c.usage for c in completions if c.usage is not None]
    if not usages:
        return None
    prompt = sum(u.prompt_tokens for u in usages)
    completion = sum(u.completion_tokens for u in usages)
    total = sum(u.total_tokens or u.prompt_tokens + u.completion_tokens for u in usages)
    return CompletionUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


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
        """Tokens summed over every request of the run."""
        return _sum_usage(self.completions)

    @property
    def cost(self) -> float | None:
        """USD summed over every request (None when no request has a known price)."""
        costs = [c.cost for c in self.completions]
        known = [c for c in costs if c is not None]
        return sum(known) if known else None


def result_text(value: object) -> str:
    """A tool's return value as the ``tool`` message content: a string as is, a pydantic model as JSON,
    anything else as JSON when it can be (else ``str()``); None is ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def check_max_turns(max_turns: object) -> int:
    """``max_turns`` checked before any I/O: an integer >= 1."""
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise InvalidRequestError(f"max_turns must be an integer >= 1, got {max_turns!r}. It is how many requests "
                                  "the tool loop may send to the model.", field="max_turns")
    return max_turns


def _message_dict(message: Any) -> dict[str, object]:
    if isinstance(message, BaseModel):
        return message.model_dump(exclude_none=True)
    if isinstance(message, Mapping):
        return dict(message)
    raise InvalidRequestError(f"messages: each message must be a dict or a Message, got {type(message).__name__}.",
                              field="messages")


def _assistant(completion: ChatCompletion) -> dict[str, object]:
    message = completion.choices[0].message if completion.choices else None
    out: dict[str, object] = {"role": "assistant", "content": message.content if message else None}
    if message is not None and message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in message.tool_calls]
    return out


def prepare(call: ToolCall, tools: ToolSet) -> PendingCall:
    """Look up the call's tool and validate its arguments; what cannot run gets its error text."""
    name = call.function.name or ""
    tool = tools.typed(name)
    if tool is None:
        known = ", ".join(tools.names) or "none"
        reason = "has no handler" if name in tools.by_name else "does not exist"
        return PendingCall(call, None, None, f"Error: the tool {name!r} {reason}. Available tools: {known}.")
    if tool.handler is None:
        return PendingCall(call, tool, None, f"Error: the tool {name!r} has no handler to run it.")
    try:
        value = tool.validate_arguments(call.function.arguments)
    except (ValidationError, ValueError) as exc:
        lines = "; ".join(f"{loc}: {msg}" for loc, msg in error_lines(exc))
        return PendingCall(call, tool, None, f"Error: invalid arguments for {name!r}: {lines}. Call the tool "
                                             "again with corrected arguments.")
    return PendingCall(call, tool, value)


class ToolLoop:
    """A checked ``run_tools`` call: the request parameters, the tools, ``max_turns`` and ``tool_timeout``."""

    def __init__(self, params: Mapping[str, Any], tools: ToolSet, max_turns: int,
                 tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT) -> None:
        self.params = {k: v for k, v in params.items() if k != "tools"}
        self.tools = tools
        self.max_turns = check_max_turns(max_turns)
        self.tool_timeout = check_tool_timeout(tool_timeout)
        if not tools.runnable:
            raise InvalidRequestError("run_tools needs at least one tool it can run: a function, an async function, "
                                      "or pydantic_function_tool(Model, handler=fn).", field="tools")
        if self.params.get("stream"):
            raise InvalidRequestError("run_tools does not stream; leave out stream=True.", field="stream")
        n = self.params.get("n")
        if isinstance(n, int) and n > 1:
            raise InvalidRequestError(f"run_tools follows one choice; got n={n}. Use n=1.", field="n")

    def _request(self, messages: list[dict[str, Any]], turn: int) -> dict[str, Any]:
        out = {**self.params, "messages": list(messages), "tools": self.tools.params}
        headers = self.params.get("extra_headers")
        if turn > 1 and headers and headers.get("idempotency-key"):  # each turn is a new request
            out["extra_headers"] = {**headers, "idempotency-key": f"{headers['idempotency-key']}-turn{turn}"}
        return out

    def steps(self) -> Generator[Any, Any, ToolRunResult]:
        """Yields request kwargs (receives a `ChatCompletion`) or `RunTools` (receives ``list[ToolOutcome]``)."""
        messages = [_message_dict(m) for m in self.params.get("messages", ())]
        records: list[ToolCallRecord] = []
        completions: list[ChatCompletion] = []
        for turn in range(1, self.max_turns + 1):
            completion: ChatCompletion = yield self._request(messages, turn)
            completions.append(completion)
            messages.append(_assistant(completion))
            calls = completion.choices[0].message.tool_calls if completion.choices else None
            if not calls:
                return ToolRunResult(completion, messages, records, completions)
            if turn == self.max_turns:
                break
            pending = [prepare(call, self.tools) for call in calls]
            outcomes: list[ToolOutcome] = yield RunTools(pending, turn, self.tool_timeout)
            for item, outcome in zip(pending, outcomes, strict=True):
                records.append(ToolCallRecord(item.id, item.name, item.call.function.arguments, item.arguments,
                                              outcome.output, outcome.result, outcome.error, outcome.duration_s,
                                              turn))
                messages.append({"role": "tool", "tool_call_id": item.id, "content": outcome.result})
        result = ToolRunResult(completions[-1], messages, records, completions)
        raise MaxTurnsError(
            f"The model still called tools after max_turns={self.max_turns} requests; the loop stopped. The "
            "transcript is in .messages and the run so far in .result; raise max_turns, or check that the tools "
            "answer what the model asks.", result=result)


def failed(pending: PendingCall, exc: BaseException, duration_s: float) -> ToolOutcome:
    """The outcome of a handler that raised: its error is the tool's result."""
    from holysheep._core.keys import redact  # an hs_ key in the message never reaches the model or a file

    text = redact(f"Error: the tool {pending.name!r} raised {type(exc).__name__}: {exc}")
    return ToolOutcome(text, None, text, duration_s)


def timed_out(pending: PendingCall, timeout: float, duration_s: float) -> ToolOutcome:
    """The outcome of a call still running after ``timeout`` seconds: the model is told, the call is left to
    finish on its own (its thread no longer counts against ``tool_threads``)."""
    text = (f"Error: the tool {pending.name!r} did not finish within {timeout:g} s (tool_timeout) and was "
            "abandoned. Try again with a smaller request, or answer without it.")
    return ToolOutcome(text, None, text, duration_s)


def not_run(pending: PendingCall) -> ToolOutcome:
    """The outcome of a call that could not run (``pending.error``)."""
    assert pending.error is not None
    return ToolOutcome(pending.error, None, pending.error, 0.0)


def wants_tool_loop(params: Mapping[str, object]) -> bool:
    """True when a batch item runs a tool loop: ``max_turns`` or ``tool_timeout`` is given, or a tool can run
    (a function, or a typed tool with a handler)."""
    if "max_turns" in params or "tool_timeout" in params:
        return True
    tools = params.get("tools")
    if not isinstance(tools, (list, tuple)):
        return False
    return any((isinstance(t, FunctionTool) and t.handler is not None)
               or (callable(t) and not isinstance(t, (Mapping, type))) for t in tools)


def plan_tool_loop(params: Mapping[str, Any]) -> ToolLoop:
    """A batch item's tool loop from its ``create()`` parameters plus ``max_turns`` (default 10) and
    ``tool_timeout`` (default 60 s)."""
    from holysheep._core.tools import tool_set

    rest = dict(params)
    max_turns = rest.pop("max_turns", DEFAULT_MAX_TURNS)
    tool_timeout = rest.pop("tool_timeout", DEFAULT_TOOL_TIMEOUT)
    if "max_repairs" in rest:
        raise InvalidRequestError("max_repairs does not apply to a tool loop: arguments that do not validate are "
                                  "sent back to the model as the tool's result. Leave out max_repairs.",
                                  field="max_repairs")
    if "tools" not in rest:
        name = "max_turns" if "max_turns" in params else "tool_timeout"
        raise InvalidRequestError(f"{name} needs tools=[...] to run (functions, or pydantic_function_tool("
                                  "Model, handler=fn)).", field=name)
    return ToolLoop(rest, tool_set(rest.pop("tools")), max_turns, tool_timeout)

"""The tool loop, sans I/O: ask the model, run the tools it calls, send their results, until it answers.

`ToolLoop.steps()` is a generator shared by the sync runner, the async runner and the batch engine. It
yields either the ``create()`` keyword arguments of the next request (send it, then ``send()`` the
reply back) or a `RunTools` (run its calls, then ``send()`` one `ToolOutcome` per call back,
in order). Its return value is the run's result (`ToolRunResult` for chat completions). What differs between
wire formats (where the conversation goes, how a reply's tool calls are read, how a result is sent back) is
asked of the format's `ToolTurns` (``_core/wire/tool_turns.py``). Each shell only sends and runs.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from holysheep._core.tool_errors import MaxTurnsError
from holysheep._core.tool_limits import DEFAULT_TOOL_TIMEOUT, check_tool_timeout
from holysheep._core.tool_results import ToolCallRecord, ToolRunResult
from holysheep._core.tools import FunctionTool, ToolSet, error_lines
from holysheep._core.wire.tool_turns import CHAT_TOOLS, ToolTurns
from holysheep._egress import scrub
from holysheep._exceptions import InvalidRequestError
from holysheep.types.chat import ToolCall

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
    """A checked ``run_tools`` call: the request parameters, the tools, ``max_turns`` and ``tool_timeout``, and
    ``turns``: the wire format's side of the loop (`ToolTurns`; chat completions' by default)."""

    def __init__(self, params: Mapping[str, Any], tools: ToolSet, max_turns: int,
                 tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT, turns: ToolTurns | None = None) -> None:
        self.params = {k: v for k, v in params.items() if k != "tools"}
        self.tools = tools
        self.turns = turns or CHAT_TOOLS
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

    def _request(self, history: list[dict[str, Any]], turn: int) -> dict[str, Any]:
        out = self.turns.request(self.params, history, self.tools.params)
        headers = self.params.get("extra_headers")
        if turn > 1 and headers and headers.get("idempotency-key"):  # each turn is a new request
            out["extra_headers"] = {**headers, "idempotency-key": f"{headers['idempotency-key']}-turn{turn}"}
        return out

    def steps(self) -> Generator[Any, Any, Any]:
        """Yields request kwargs (receives the reply: a `ChatCompletion`, a `Response`, ...) or `RunTools`
        (receives ``list[ToolOutcome]``); returns what ``turns.result`` makes (a `ToolRunResult`, ...)."""
        turns = self.turns
        history = turns.start(self.params)
        records: list[ToolCallRecord] = []
        replies: list[Any] = []
        for turn in range(1, self.max_turns + 1):
            reply = yield self._request(history, turn)
            replies.append(reply)
            history.extend(turns.reply_items(reply))
            calls = turns.calls(reply)
            if not calls:
                return turns.result(reply, history, records, replies)
            if turn == self.max_turns:
                break
            pending = [prepare(call, self.tools) for call in calls]
            outcomes: list[ToolOutcome] = yield RunTools(pending, turn, self.tool_timeout)
            for item, outcome in zip(pending, outcomes, strict=True):
                records.append(ToolCallRecord(item.id, item.name, item.call.function.arguments, item.arguments,
                                              outcome.output, outcome.result, outcome.error, outcome.duration_s,
                                              turn))
                history.append(turns.result_item(item.id, outcome.result))
        result = turns.result(replies[-1], history, records, replies)
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


def plan_tool_loop(params: Mapping[str, Any], turns: ToolTurns | None = None) -> ToolLoop:
    """A batch item's tool loop from its ``create()`` parameters plus ``max_turns`` (default 10) and
    ``tool_timeout`` (default 60 s); ``turns``: its wire format's side of the loop (chat completions' by default)."""
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
    return ToolLoop(rest, tool_set(rest.pop("tools")), max_turns, tool_timeout, turns)

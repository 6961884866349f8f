"""``client.chat.completions.run_tools``: the tool loop for the sync and async clients (``responses.run_tools``
drives the same loop with its own ``send``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from holysheep._clients.resources.chat import Executor, parse_chat_completion
from holysheep._core.hooks import HookSet, active_hooks
from holysheep._core.request import RequestSpec, RunToolsParams, ToolInput, build_chat_spec
from holysheep._core.sentinels import given, or_default
from holysheep.types.chat import ChatCompletionMessageParam, Message, ModelName

if TYPE_CHECKING:
    from holysheep._core.tool_loop import ToolLoop, ToolRunResult
    from holysheep._core.wire.tool_turns import ToolTurns
    from holysheep._engine.tool_pool import ToolPool

__all__ = ["AsyncRunTools", "SyncRunTools", "arun_tools", "plan_tools", "run_tools"]

Messages = Iterable[ChatCompletionMessageParam | Message]


class SyncRunTools:
    """Adds ``run_tools`` to the sync client's ``chat.completions``."""

    _client: Executor

    def run_tools(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput], max_turns: int = 10,
                  tool_timeout: float | None = 60.0, **params: Unpack[RunToolsParams]) -> ToolRunResult:
        """Ask the model, run the tools it calls, send their results back, until it answers without a tool call.

        ``tools``: plain functions and async functions (described by `function_tool` from their type hints
        and docstring), ``pydantic_function_tool(Model, handler=fn)``, or raw tool dicts (which the loop
        cannot run). The calls of one turn run concurrently in the SDK's own threads (``tool_threads`` at once,
        a client option). A tool that raises, one still running after ``tool_timeout`` seconds (default 60;
        None: no limit; it is then left to finish on its own), an unknown tool and arguments that do not
        validate are sent back to the model as the tool's result.
        After ``max_turns`` requests that still call tools, raises `MaxTurnsError` (its ``messages`` hold the
        transcript). Returns a `ToolRunResult`: ``completion``, ``messages``, ``tool_calls`` (each with its
        result and duration), ``usage`` and ``cost`` over every request. Other arguments are ``create()``'s;
        each request gets the client's retries, fallbacks and timeouts. See ``docs/tools.md``.
        """
        loop = plan_tools({"model": model, "messages": messages, **params}, tools, max_turns, tool_timeout)
        result: ToolRunResult = run_tools(self._client, loop)
        return result


class AsyncRunTools:
    """Adds ``run_tools`` to the async client's ``chat.completions`` (``await`` it)."""

    _client: Executor

    async def run_tools(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput],
                        max_turns: int = 10, tool_timeout: float | None = 60.0,
                        **params: Unpack[RunToolsParams]) -> ToolRunResult:
        """The async ``run_tools``: the calls of one turn run concurrently (plain functions in the SDK's own
        threads, async ones on this loop). Same arguments, result and errors as the sync
        ``Client.chat.completions.run_tools``."""
        loop = plan_tools({"model": model, "messages": messages, **params}, tools, max_turns, tool_timeout)
        result: ToolRunResult = await arun_tools(self._client, loop)
        return result


def request_spec(request: Mapping[str, Any]) -> RequestSpec:
    """The spec of one non-streamed request of the loop."""
    params = {k: v for k, v in request.items() if k not in ("model", "messages", "stream")}
    return build_chat_spec(model=request["model"], messages=request["messages"], stream=False,
                           params=params, parse=parse_chat_completion)


def plan_tools(params: Mapping[str, object], tools: Any, max_turns: int, tool_timeout: float | None,
               turns: ToolTurns | None = None) -> ToolLoop:
    """Check ``run_tools`` arguments before any I/O; ``turns``: the wire format's side of the loop (chat's by
    default)."""
    from holysheep._core.tool_loop import ToolLoop  # lazy: `import holysheep` stays light
    from holysheep._core.tools import tool_set

    return ToolLoop(given(params), tool_set(tools), or_default(max_turns, 10), or_default(tool_timeout, 60.0),
                    turns)


def _pool_of(client: Executor) -> ToolPool:
    """The tool threads of the client's ``tool_threads`` size."""
    from holysheep._core.tool_limits import DEFAULT_TOOL_THREADS
    from holysheep._engine.tool_pool import tool_pool

    config = getattr(client, "config", None)
    return tool_pool(getattr(config, "tool_threads", DEFAULT_TOOL_THREADS))


def _hooks_of(client: Executor) -> HookSet | None:
    """The client's hooks and the process-wide ones (the tool runner reports each tool call to them)."""
    config = getattr(client, "config", None)
    return active_hooks(getattr(config, "hooks", None))


def run_tools(client: Executor, loop: ToolLoop, send: Callable[[dict[str, Any]], object] | None = None) -> Any:
    """The sync loop: requests through ``send`` (default: a chat completion through ``client._execute``), tools
    through `run_turn`. Returns what the loop's `ToolTurns` makes (a `ToolRunResult` for chat)."""
    from holysheep._core.tool_loop import RunTools
    from holysheep._engine.tool_calls import run_turn

    request = send or (lambda step: client._execute(request_spec(step)))
    hooks, pool = _hooks_of(client), _pool_of(client)
    steps = loop.steps()
    step = next(steps)
    while True:
        answer = run_turn(step, hooks, pool) if isinstance(step, RunTools) else request(step)
        try:
            step = steps.send(answer)
        except StopIteration as stop:
            return stop.value


async def arun_tools(client: Executor, loop: ToolLoop,
                     send: Callable[[dict[str, Any]], Awaitable[object]] | None = None) -> Any:
    """The async loop: requests through ``await send(...)`` (default: a chat completion through
    ``client._execute``), tools through `run_turn_async`."""
    from holysheep._core.tool_loop import RunTools
    from holysheep._engine.tool_calls import run_turn_async

    async def chat(step: dict[str, Any]) -> object:
        answer: object = await client._execute(request_spec(step))
        return answer

    request = send or chat
    hooks, pool = _hooks_of(client), _pool_of(client)
    steps = loop.steps()
    step = next(steps)
    while True:
        if isinstance(step, RunTools):
            answer: object = await run_turn_async(step, hooks, pool=pool)
        else:
            answer = await request(step)
        try:
            step = steps.send(answer)
        except StopIteration as stop:
            return stop.value

"""run_tools on both clients: the loop, parallel calls, failures reported to the model, max_turns, the result."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import holysheep
from holysheep import InvalidRequestError, MaxTurnsError, pydantic_function_tool
from holysheep.testing import FakeServer, Script

from .conftest import call, run_tools, user


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def test_one_tool_round_trip(kind: str) -> None:
    script = Script([{"match": "weather", "replies": [{"tool_calls": [call("get_weather", city="Paris")]},
                                                      "Answer: {tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("weather in Paris?"), tools=[get_weather])
        bodies = [r.body for r in server.requests]
    assert result.content == "Answer: sunny in Paris"
    assert result.turns == 2 and len(bodies) == 2
    assert bodies[0]["tools"][0]["function"]["name"] == "get_weather"
    assert bodies[0]["tools"][0]["function"]["strict"] is True
    call_id = result.tool_calls[0].id
    assert bodies[1]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "sunny in Paris"}]
    assert result.messages == [*bodies[1]["messages"], {"role": "assistant", "content": "Answer: sunny in Paris"}]
    record = result.tool_calls[0]
    assert (record.name, record.arguments, record.output, record.error, record.turn) == (
        "get_weather", '{"city":"Paris"}', "sunny in Paris", None, 1)
    assert record.parsed_arguments.city == "Paris"


def test_usage_and_cost_count_every_request(kind: str) -> None:
    script = Script([{"match": "w", "replies": [{"tool_calls": [call("get_weather", city="Oslo")]}, "done"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("w"), tools=[get_weather])
    first, last = result.completions
    assert result.usage.prompt_tokens == first.usage.prompt_tokens + last.usage.prompt_tokens
    assert result.usage.total_tokens == first.usage.total_tokens + last.usage.total_tokens
    assert result.cost == pytest.approx(first.cost + last.cost)
    assert result.completion is last


def test_durations_come_from_the_clock(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep._engine import tool_calls as _tool_calls

    ticks = itertools.count(start=100, step=2.5)
    monkeypatch.setattr(_tool_calls, "clock", lambda: next(ticks))
    script = Script([{"match": "w", "replies": [{"tool_calls": [call("get_weather", city="Oslo")]}, "done"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("w"), tools=[get_weather])
    assert result.tool_calls[0].duration_s == 2.5


def test_two_parallel_calls_overlap_sync() -> None:
    """Each tool waits for the other to have started: sequential runs would break the barrier."""
    barrier = threading.Barrier(2, timeout=5)
    log: list[str] = []

    def lookup(key: str) -> str:
        """Look a key up."""
        log.append(f"start {key}")
        barrier.wait()
        log.append(f"end {key}")
        return key.upper()

    script = Script([{"match": "both", "replies": [{"tool_calls": [call("lookup", key="a"), call("lookup", key="b")]},
                                                   "{tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run_tools("sync", server, messages=user("both"), tools=[lookup])
    assert [r.error for r in result.tool_calls] == [None, None]
    assert sorted(log[:2]) == ["start a", "start b"] and sorted(log[2:]) == ["end a", "end b"]
    assert result.content == "A; B"  # results in call order


def test_two_parallel_calls_overlap_async() -> None:
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    log: list[str] = []

    async def lookup(key: str) -> str:
        """Look a key up."""
        log.append(f"start {key}")
        started[key].set()
        await asyncio.wait_for(started["b" if key == "a" else "a"].wait(), 5)  # the other one is running too
        log.append(f"end {key}")
        return key.upper()

    def fresh(key: str) -> str:  # a plain function in the async runner runs in a worker thread
        """Look a key up."""
        return key

    script = Script([{"match": "both", "replies": [{"tool_calls": [call("lookup", key="a"), call("lookup", key="b"),
                                                                   call("fresh", key="c")]}, "{tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run_tools("async", server, messages=user("both"), tools=[lookup, fresh])
    assert [r.error for r in result.tool_calls] == [None, None, None]
    assert log[:2] == ["start a", "start b"]  # both started before either ended: they overlap
    assert sorted(log[2:]) == ["end a", "end b"]  # (which wakes first is the event loop's: 3.13 wakes b first)
    assert result.content == "A; B; c"


def test_a_raising_tool_is_reported_to_the_model(kind: str) -> None:
    def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"no: {reason}")

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("explode", reason="x")]}, "saw {tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("go"), tools=[explode])
        sent = server.requests[1].body["messages"][-1]
    error = "Error: the tool 'explode' raised ValueError: no: x"
    assert sent["content"] == error and result.tool_calls[0].error == error
    assert result.content == f"saw {error}"


def test_a_key_in_a_tool_error_is_redacted(kind: str) -> None:
    secret = "hs_live_" + "k" * 32

    def leaky() -> str:
        """Fails with a key in its message."""
        raise RuntimeError(f"auth failed for {secret}")

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("leaky")]}, "ok"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("go"), tools=[leaky])
        sent = server.requests[1].raw_body.decode()
    assert secret not in sent and secret not in str(result.tool_calls[0].error)
    assert "auth failed for hs_" in result.tool_calls[0].error


def test_an_unknown_tool_is_reported_to_the_model(kind: str) -> None:
    script = Script([{"match": "go", "replies": [{"tool_calls": [call("nope", a=1)]}, "ok"]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("go"), tools=[get_weather])
        sent = server.requests[1].body["messages"][-1]["content"]
    assert sent == "Error: the tool 'nope' does not exist. Available tools: get_weather."
    assert result.tool_calls[0].error == sent and result.content == "ok"


def test_invalid_arguments_are_reported_and_the_model_repairs_them(kind: str) -> None:
    class Add(BaseModel):
        """Add two integers."""

        a: int
        b: int

    add = pydantic_function_tool(Add, handler=lambda args: args.a + args.b)
    script = Script([{"match": "sum", "replies": [
        {"tool_calls": [call("Add", a="one", b=2)]},
        {"tool_calls": [call("Add", a=1, b=2)]},
        "The sum is {tool_results}."]}])
    with FakeServer(reply=script) as server:
        result = run_tools(kind, server, messages=user("sum 1 and 2"), tools=[add])
        first_result = server.requests[1].body["messages"][-1]["content"]
    assert first_result.startswith("Error: invalid arguments for 'Add': a: Input should be a valid integer")
    assert [r.error is None for r in result.tool_calls] == [False, True]
    assert result.tool_calls[1].output == 3 and result.tool_calls[1].turn == 2
    assert result.content == "The sum is 3."


def test_max_turns_raises_with_the_transcript(kind: str) -> None:
    script = Script([{"match": "loop", "reply": {"tool_calls": [call("get_weather", city="Rome")]}}])  # forever
    with FakeServer(reply=script) as server:
        with pytest.raises(MaxTurnsError, match="max_turns=3") as info:
            run_tools(kind, server, messages=user("loop"), tools=[get_weather], max_turns=3)
        assert len(server.requests) == 3
    err = info.value
    assert len(err.tool_calls) == 2  # the third reply's call was not run
    roles = [m["role"] for m in err.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert err.result.turns == 3 and err.completion.choices[0].finish_reason == "tool_calls"


def test_bad_arguments_are_typed_errors_before_any_request(kind: str) -> None:
    with FakeServer() as server:
        with pytest.raises(InvalidRequestError, match="max_turns must be an integer >= 1"):
            run_tools(kind, server, messages=user("x"), tools=[get_weather], max_turns=0)
        with pytest.raises(InvalidRequestError, match="at least one tool it can run"):
            run_tools(kind, server, messages=user("x"), tools=[{"type": "function", "function": {"name": "f"}}])
        with pytest.raises(InvalidRequestError, match="two tools are named 'get_weather'"):
            run_tools(kind, server, messages=user("x"), tools=[get_weather, get_weather])
        assert server.requests == []


def test_async_tools_in_the_sync_runner_and_tool_results_as_json() -> None:
    class Point(BaseModel):
        x: int

    async def where(thing: str) -> Point:
        """Where a thing is."""
        await asyncio.sleep(0)
        return Point(x=len(thing))

    def listing() -> list[dict[str, Any]]:
        """Everything."""
        return [{"a": 1}]

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("where", thing="abc"), call("listing")]},
                                                 "{tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run_tools("sync", server, messages=user("go"), tools=[where, listing])
    assert result.content == '{"x":3}; [{"a": 1}]'
    assert isinstance(result.tool_calls[0].output, Point)


def test_public_names() -> None:
    assert holysheep.ToolRunResult.__name__ == "ToolRunResult"
    assert {"function_tool", "pydantic_function_tool", "MaxTurnsError", "ToolArgumentsError"} <= set(holysheep.__all__)

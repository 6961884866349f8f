"""``responses.run_tools`` on both clients (#44): the tool loop on the Responses API. Each turn sends the whole
conversation as ``input`` items (the reply's own output items, then one ``function_call_output`` per call), the
tools flat (``{"type": "function", "name": ...}``); on a server without ``/responses`` it goes through the bridge
to chat completions (one 404 for the whole run)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client, InvalidRequestError, MaxTurnsError, function_tool
from holysheep._core.wire.responses_tools import ResponseToolRunResult
from holysheep.testing import FakeServer, Response, Script
from holysheep.types.responses import Response as ApiResponse
from holysheep.types.responses import ResponseFunctionToolCall

from .conftest import call


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city name.
    """
    return f"sunny in {city}"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run(kind: str, server: FakeServer, **kwargs: Any) -> Any:
    """``client.responses.run_tools(**kwargs)`` on a fresh client of ``kind`` (``sync``/``async``)."""
    kwargs.setdefault("model", "gpt-4.1")
    if kind == "sync":
        with Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return client.responses.run_tools(**kwargs)

    async def go() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return await client.responses.run_tools(**kwargs)

    return asyncio.run(go())


def _calls(response: ApiResponse) -> list[ResponseFunctionToolCall]:
    return [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]


def _sent(server: FakeServer) -> list[tuple[str, dict[str, Any]]]:
    return [(r.path, r.body) for r in server.requests if r.path != "/v1/quota"]


def test_one_tool_round_trip(kind: str) -> None:
    script = Script([{"match": "weather", "replies": [{"tool_calls": [call("get_weather", city="Paris")]},
                                                      "Answer: {tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run(kind, server, input="weather in Paris?", tools=[get_weather], instructions="Be brief.")
        sent = _sent(server)
    assert isinstance(result, ResponseToolRunResult)
    assert result.output_text == "Answer: sunny in Paris" and result.content == "Answer: sunny in Paris"
    assert [path for path, _ in sent] == ["/v1/responses", "/v1/responses"]
    first, second = (body for _, body in sent)
    parameters = function_tool(get_weather)["function"]["parameters"]
    assert first == {"model": "gpt-4.1", "instructions": "Be brief.",
                     "input": [{"role": "user", "content": "weather in Paris?"}],
                     "tools": [{"type": "function", "name": "get_weather", "description": "The weather in a city.",
                                "parameters": parameters, "strict": True}]}
    (fc,) = _calls(result.responses[0])
    assert (fc.name, fc.arguments, fc.status) == ("get_weather", '{"city":"Paris"}', "completed")
    assert fc.call_id.startswith("call_") and fc.id is not None and fc.id.startswith("fc_")
    assert second == {**first, "input": [
        {"role": "user", "content": "weather in Paris?"},
        {"type": "function_call", "call_id": fc.call_id, "name": "get_weather", "arguments": '{"city":"Paris"}',
         "id": fc.id, "status": "completed"},
        {"type": "function_call_output", "call_id": fc.call_id, "output": "sunny in Paris"}]}
    assert result.input[:3] == second["input"]
    assert [item["type"] for item in result.input[3:]] == ["message"]
    assert result.input[3]["content"][0]["text"] == "Answer: sunny in Paris"
    assert result.turns == 2 and result.response is result.responses[-1] and result.completion is result.response
    record = result.tool_calls[0]
    assert (record.id, record.name, record.arguments, record.output, record.error, record.turn) == (
        fc.call_id, "get_weather", '{"city":"Paris"}', "sunny in Paris", None, 1)
    assert record.parsed_arguments.city == "Paris"


def test_usage_and_cost_count_every_request(kind: str) -> None:
    script = Script([{"match": "w", "replies": [{"tool_calls": [call("get_weather", city="Oslo")]}, "done"]}])
    with FakeServer(reply=script) as server:
        result = run(kind, server, input="w", tools=[get_weather])
    first, last = result.responses
    assert first.usage is not None and last.usage is not None and result.usage is not None
    assert result.usage.input_tokens == first.usage.input_tokens + last.usage.input_tokens > 0
    assert result.usage.output_tokens == first.usage.output_tokens + last.usage.output_tokens > 0
    assert result.usage.total_tokens == first.usage.total_tokens + last.usage.total_tokens
    assert first.cost is not None and last.cost is not None
    assert result.cost == pytest.approx(first.cost + last.cost)


def test_parallel_calls_are_answered_in_order(kind: str) -> None:
    script = Script([{"match": "sum", "replies": [
        {"tool_calls": [call("add", a=1, b=2), call("add", a=3, b=4)]}, "The sums: {tool_results}"]}])
    with FakeServer(reply=script) as server:
        result = run(kind, server, input=[{"role": "user", "content": "sum please"}], tools=[add])
        sent = _sent(server)
    assert len(sent) == 2
    one, two = _calls(result.responses[0])
    items = sent[1][1]["input"]
    assert [(i.get("type"), i.get("call_id")) for i in items] == [
        (None, None), ("function_call", one.call_id), ("function_call", two.call_id),
        ("function_call_output", one.call_id), ("function_call_output", two.call_id)]
    assert [i["output"] for i in items[3:]] == ["3", "7"]
    assert [r.output for r in result.tool_calls] == [3, 7]
    assert result.output_text.startswith("The sums: ")


def test_a_failing_or_unknown_tool_is_reported_to_the_model(kind: str) -> None:
    def broken(x: int) -> str:
        """Always fails."""
        raise RuntimeError("boom")

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("broken", x=1), call("nope")]}, "ok"]}])
    with FakeServer(reply=script) as server:
        result = run(kind, server, input="go", tools=[broken])
        outputs = [i["output"] for i in _sent(server)[1][1]["input"] if i.get("type") == "function_call_output"]
    assert outputs == ["Error: the tool 'broken' raised RuntimeError: boom",
                       "Error: the tool 'nope' does not exist. Available tools: broken."]
    assert [r.error for r in result.tool_calls] == outputs


def test_max_turns_raises_with_the_conversation(kind: str) -> None:
    script = Script([{"match": "loop", "reply": {"tool_calls": [call("get_weather", city="Rome")]}}])  # forever
    with FakeServer(reply=script) as server:
        with pytest.raises(MaxTurnsError, match="max_turns=3") as info:
            run(kind, server, input="loop", tools=[get_weather], max_turns=3)
        assert len(_sent(server)) == 3
    err = info.value
    assert len(err.tool_calls) == 2  # the third reply's call was not run
    assert [m.get("type", "message") for m in err.messages] == [
        "message", "function_call", "function_call_output", "function_call", "function_call_output", "function_call"]
    assert isinstance(err.result, ResponseToolRunResult) and err.result.turns == 3
    assert isinstance(err.completion, ApiResponse)


def test_bad_arguments_are_typed_errors_before_any_request(kind: str) -> None:
    with FakeServer() as server:
        with pytest.raises(InvalidRequestError, match="run_tools does not stream"):
            run(kind, server, input="x", tools=[get_weather], stream=True)
        with pytest.raises(InvalidRequestError, match="at least one tool it can run"):
            run(kind, server, input="x", tools=[{"type": "function", "name": "f", "parameters": {}}])
        with pytest.raises(InvalidRequestError, match="unknown parameter 'messages'"):
            run(kind, server, input="x", tools=[get_weather], messages=[])
        assert _sent(server) == []


def test_raw_responses_tools_are_sent_as_given(kind: str) -> None:
    raw = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    with FakeServer(reply="fine") as server:
        result = run(kind, server, input="hi", tools=[get_weather, raw])
        (body,) = [b for _, b in _sent(server)]
    assert body["tools"][1] == raw and body["tools"][0]["name"] == "get_weather"
    assert result.output_text == "fine" and result.turns == 1 and result.tool_calls == []


def test_a_chat_only_server_runs_the_loop_through_the_bridge(kind: str) -> None:
    script = Script([{"match": "weather", "replies": [{"tool_calls": [call("get_weather", city="Paris")]},
                                                      "Answer: {tool_results}"]}])
    with FakeServer(reply=script) as server:
        server.on("POST", "/responses", lambda request: Response(404, {"error": {
            "message": "Not Found", "type": "invalid_request_error", "code": None, "param": None}}))
        result = run(kind, server, input="weather in Paris?", tools=[get_weather], instructions="Be brief.")
        sent = _sent(server)
    assert [path for path, _ in sent] == ["/v1/responses", "/v1/chat/completions", "/v1/chat/completions"]
    assert result.output_text == "Answer: sunny in Paris" and result.turns == 2
    (fc,) = _calls(result.responses[0])
    assert sent[2][1]["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": fc.call_id, "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": fc.call_id, "content": "sunny in Paris"}]
    assert sent[2][1]["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": function_tool(get_weather)["function"]["parameters"], "strict": True}}]


def test_the_responses_turns_sans_io() -> None:
    """The Responses API's `ToolTurns` alone: a call with only ``previous_response_id`` sends no ``input`` until
    the conversation has items, and keeps ``previous_response_id`` on every turn; chat tools go out flat."""
    from holysheep._core.wire.responses_tools import RESPONSES_TOOLS

    params = {"model": "m", "previous_response_id": "resp_1"}
    tool = function_tool(get_weather)
    assert RESPONSES_TOOLS.start(params) == []
    first = RESPONSES_TOOLS.request(params, [], [tool])
    assert first == {"model": "m", "previous_response_id": "resp_1", "tools": [
        {"type": "function", "name": "get_weather", "description": "The weather in a city.",
         "parameters": tool["function"]["parameters"], "strict": True}]}
    reply = ApiResponse.model_validate({"id": "resp_2", "output": [
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"}]})
    history = [*RESPONSES_TOOLS.reply_items(reply), RESPONSES_TOOLS.result_item("c1", "sunny")]
    assert [(c.id, c.function.name, c.function.arguments) for c in RESPONSES_TOOLS.calls(reply)] == [
        ("c1", "get_weather", "{}")]
    second = RESPONSES_TOOLS.request(params, history, [tool])
    assert second["previous_response_id"] == "resp_1" and second["input"] == [
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]

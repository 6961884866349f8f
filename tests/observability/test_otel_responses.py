"""GenAI spans of Responses API calls (#44): ``gen_ai.operation.name`` is ``chat`` (the conventions' well-known
value for chat-style inference, which the Responses API is; a custom ``responses`` is not to be used where a
well-known value applies), the span is ``chat {model}``, ``openai.api.type`` (the OpenAI conventions' attribute)
names the API that served it (``responses``, or ``chat_completions`` through the bridge), and
``gen_ai.usage.input_tokens``/``output_tokens`` are the response's ``usage.input_tokens``/``output_tokens``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer, Response, Script

from .otel_util import Telemetry, instrumented

pytest.importorskip("opentelemetry.sdk")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(reply="It is sunny in Paris today.") as s:
        yield s


def _client(server: FakeServer) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0)


def _chat_only(server: FakeServer) -> None:
    server.on("POST", "/responses", lambda request: Response(404, {"error": {
        "message": "Not Found", "type": "invalid_request_error", "code": None, "param": None}}))


def _inference(t: Telemetry) -> list[Any]:
    return [s for s in t.spans() if s.attributes.get("gen_ai.operation.name") != "execute_tool"]


def _check(span: Any, usage: Any, api_type: str, response_id: str) -> None:
    attrs = dict(span.attributes)
    assert span.name == "chat gpt-4.1"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["openai.api.type"] == api_type
    assert attrs["gen_ai.provider.name"] == "holysheep"
    assert (attrs["gen_ai.request.model"], attrs["gen_ai.response.model"]) == ("gpt-4.1", "gpt-4.1")
    assert attrs["gen_ai.response.id"] == response_id
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (
        usage.input_tokens, usage.output_tokens)
    assert usage.input_tokens > 0 and usage.output_tokens > 0


def test_a_create_is_a_chat_span_with_the_responses_usage(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        response = client.responses.create(model="gpt-4.1", input="weather?", max_output_tokens=20, temperature=0.5)
    (span,) = t.spans()
    _check(span, response.usage, "responses", response.id)
    assert span.attributes["gen_ai.request.max_tokens"] == 20
    assert span.attributes["gen_ai.request.temperature"] == 0.5
    assert span.attributes["gen_ai.response.finish_reasons"] == ("completed",)
    usage_points = t.points("gen_ai.client.token.usage")
    assert sorted((p.attributes["gen_ai.token.type"], p.sum) for p in usage_points) == sorted(
        [("input", response.usage.input_tokens), ("output", response.usage.output_tokens)])
    assert {p.attributes["gen_ai.operation.name"] for p in usage_points} == {"chat"}


def test_a_stream_is_a_chat_span_with_the_final_usage(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client, \
            client.responses.stream(model="gpt-4.1", input="weather?") as stream:
        response = stream.get_final_response()
    (span,) = t.spans()
    _check(span, response.usage, "responses", response.id)


def test_an_async_create(server: FakeServer) -> None:
    async def go() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            return await client.responses.create(model="gpt-4.1", input="weather?")

    with instrumented() as t:
        response = asyncio.run(go())
    (span,) = t.spans()
    _check(span, response.usage, "responses", response.id)


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_bridged_call_names_the_api_it_went_to(server: FakeServer, stream: bool) -> None:
    _chat_only(server)
    with instrumented() as t, _client(server) as client:
        client.responses.bridge = "always"
        if stream:
            with client.responses.stream(model="gpt-4.1", input="weather?") as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(model="gpt-4.1", input="weather?")
    (span,) = t.spans()
    _check(span, response.usage, "chat_completions", response.id)
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_chat_spans_are_unchanged(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    (span,) = t.spans()
    assert span.name == "chat gpt-4.1" and "openai.api.type" not in span.attributes


def test_run_tools_on_responses_is_one_chat_span_per_turn_and_a_tool_span(server: FakeServer) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    server.reply = Script([{"match": "weather", "replies": [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, "Answer: {tool_results}"]}])
    with instrumented() as t, _client(server) as client:
        result = client.responses.run_tools(model="gpt-4.1", input="weather?", tools=[get_weather])
    spans = _inference(t)
    assert [s.name for s in spans] == ["chat gpt-4.1", "chat gpt-4.1"]
    for span, response in zip(spans, result.responses, strict=True):
        _check(span, response.usage, "responses", response.id)
    (tool,) = [s for s in t.spans() if s not in spans]
    assert tool.name == "execute_tool get_weather"
    assert tool.attributes["gen_ai.tool.call.id"] == result.tool_calls[0].id


def test_content_capture_records_the_input_items_and_the_instructions(server: FakeServer) -> None:
    items = [{"role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
             {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
             {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
             {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
             {"type": "function_call_output", "call_id": "call_2", "output": "rain"}]
    with instrumented(capture_message_content=True) as t, _client(server) as client:
        client.responses.create(model="gpt-4.1", instructions="Be brief.", input=items)
        client.responses.create(model="gpt-4.1", input="plain text")
    first, second = t.spans()
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]},
        {"role": "assistant", "parts": [
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            {"type": "tool_call", "id": "call_2", "name": "get_weather", "arguments": '{"city":"Oslo"}'}]},
        {"role": "tool", "parts": [{"type": "text", "content": "sunny"}]},
        {"role": "tool", "parts": [{"type": "text", "content": "rain"}]}]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "It is sunny in Paris today."}],
         "finish_reason": "completed"}]
    assert json.loads(second.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "plain text"}]}]
    assert "gen_ai.system_instructions" not in second.attributes


def test_without_content_capture_no_content_is_recorded(server: FakeServer) -> None:
    with instrumented(capture_message_content=False) as t, _client(server) as client:
        client.responses.create(model="gpt-4.1", instructions="Be brief.", input="secret question")
    (span,) = t.spans()
    assert not {"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"} & set(span.attributes)

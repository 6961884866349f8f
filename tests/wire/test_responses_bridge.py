"""``responses.create`` on a server that serves only chat completions (#44): bridged to ``/chat/completions``
after the server's 404 for ``/responses`` (remembered by the client: a batch does not pay a 404 per item), or
always; what cannot be bridged raises `ResponsesBridgeError` naming it, before any request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from holysheep import Client, NotFoundError, ResponsesBridgeError
from holysheep._core.wire.responses_bridge import to_chat, to_response
from holysheep.testing import FakeServer, Response, ScriptedReply, tool_call
from holysheep.types.chat import ChatCompletion
from holysheep.types.responses import ResponseFunctionToolCall

KEY = "sk-test-bridge-0123456789abcdef"


def _chat_only(server: FakeServer) -> None:
    server.on("POST", "/responses", lambda request: Response(404, {"error": {
        "message": "Not Found", "type": "invalid_request_error", "code": None, "param": None}}))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(api_key=KEY) as srv:
        _chat_only(srv)
        yield srv


def _paths(server: FakeServer) -> list[str]:
    return [r.path for r in server.requests if r.path != "/v1/quota"]


def test_instructions_items_tools_and_format_map_to_chat() -> None:
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}]
    items = [{"role": "developer", "content": "dev"},
             {"role": "user", "content": [{"type": "input_text", "text": "hi "},
                                          {"type": "input_text", "text": "there"}]},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
             {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "one"}]
    chat = to_chat({"model": "m", "instructions": "sys", "input": items, "tools": tools, "max_output_tokens": 9,
                    "tool_choice": {"type": "function", "name": "f"}, "temperature": 0.1,
                    "text": {"format": {"type": "json_schema", "name": "X", "schema": {"type": "object"}}}})
    assert chat == {
        "model": "m", "temperature": 0.1, "max_tokens": 9,
        "messages": [{"role": "system", "content": "sys"}, {"role": "system", "content": "dev"},
                     {"role": "user", "content": "hi there"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                         {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "one"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": True}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "response_format": {"type": "json_schema", "json_schema": {"name": "X", "schema": {"type": "object"}}}}


def test_a_completion_maps_back_to_a_response_with_its_usage() -> None:
    completion = ChatCompletion.model_validate({
        "id": "x", "model": "m", "created": 5, "choices": [{"index": 0, "finish_reason": "length", "message": {
            "role": "assistant", "content": "partial", "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "g", "arguments": "{\"a\":1}"}}]}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                  "prompt_tokens_details": {"cached_tokens": 2}}})
    response = to_response(completion)
    assert (response.output_text, response.status) == ("partial", "incomplete")
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    call = response.output[1]
    assert isinstance(call, ResponseFunctionToolCall) and (call.call_id, call.name, call.arguments) == (
        "c9", "g", '{"a":1}')
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens,
                                           response.usage.total_tokens) == (7, 3, 10)
    assert response.usage.input_tokens_details is not None and response.usage.input_tokens_details.cached_tokens == 2


def test_after_one_404_every_call_goes_to_chat_completions(server: FakeServer) -> None:
    with Client(base_url=server.url, api_key=KEY) as client:
        assert client.responses.bridge == "auto"
        first = client.responses.create(model="m", input="hello", instructions="be brief", max_output_tokens=30)
        second = client.responses.create(model="m", input="again")
        assert (first.output_text, second.output_text) == ("hello", "again")
        assert first.usage is not None and first.usage.output_tokens == 1
        assert _paths(server) == ["/v1/responses", "/v1/chat/completions", "/v1/chat/completions"]
        sent = [r.body for r in server.requests if r.path == "/v1/chat/completions"]
        assert sent[0] == {"model": "m", "max_tokens": 30, "messages": [
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]}


def test_a_batch_pays_the_404_once_not_per_item(server: FakeServer) -> None:
    with Client(base_url=server.url, api_key=KEY) as client:
        results = client.responses.batch([f"item {i}" for i in range(12)], model="m", concurrency=1)
        assert [r.response.output_text for r in results] == [f"item {i}" for i in range(12)]  # type: ignore[union-attr]
        assert _paths(server).count("/v1/responses") == 1
        assert _paths(server).count("/v1/chat/completions") == 12


def test_function_calls_come_back_as_items_and_parse_works(server: FakeServer) -> None:
    class City(BaseModel):
        name: str

    with Client(base_url=server.url, api_key=KEY) as client:
        client.responses.bridge = "always"
        server.reply = ScriptedReply("", tool_calls=[tool_call("f", {"x": 1}, id="call_7")])  # type: ignore[assignment]
        reply = client.responses.create(model="m", input="call f", tools=[
            {"type": "function", "name": "f", "parameters": {"type": "object"}}])
        assert [(i.call_id, json.loads(i.arguments)) for i in reply.output
                if isinstance(i, ResponseFunctionToolCall)] == [("call_7", {"x": 1})]
        server.reply = ScriptedReply('{"name": "Paris"}')  # type: ignore[assignment]
        parsed = client.responses.parse(model="m", input="a city", text_format=City)
        assert parsed.output_parsed == City(name="Paris")
        assert "/v1/responses" not in _paths(server)


def test_what_cannot_be_bridged_raises_naming_it_before_any_request(server: FakeServer) -> None:
    with Client(base_url=server.url, api_key=KEY) as client:
        client.responses.bridge = "always"
        with pytest.raises(ResponsesBridgeError, match="previous_response_id") as info:
            client.responses.create(model="m", input="x", previous_response_id="resp_1")
        assert info.value.field == "previous_response_id"
        with pytest.raises(ResponsesBridgeError, match="web_search"):
            client.responses.create(model="m", input="x", tools=[{"type": "web_search"}])
        assert _paths(server) == []


def test_never_keeps_the_404_and_a_missing_model_is_not_a_missing_endpoint() -> None:
    with FakeServer(api_key=KEY, strict_models=True, models=["known"]) as server, \
            Client(base_url=server.url, api_key=KEY) as client:
        with pytest.raises(NotFoundError):
            client.responses.create(model="unknown-model", input="x")
        assert client.responses.format.missing == set()  # a 404 about the model: the endpoint is there
        _chat_only(server)
        client.responses.bridge = "never"
        with pytest.raises(NotFoundError):
            client.responses.create(model="known", input="x")
        assert _paths(server) == ["/v1/responses", "/v1/responses"]


def test_a_jsonl_file_of_responses_lines_pays_the_404_once(server: FakeServer, tmp_path: Path) -> None:
    from holysheep.batch import run_jsonl

    lines = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/responses",
              "body": {"model": "m", "input": f"l{i}"}}
             for i in range(6)]
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with Client(base_url=server.url, api_key=KEY) as client:
        report = run_jsonl(client, src, dst, concurrency=1, output_format="openai", check_quota=False)
    assert (report.succeeded, report.failed) == (6, 0)
    assert _paths(server).count("/v1/responses") == 1 and _paths(server).count("/v1/chat/completions") == 6
    bodies = [json.loads(line)["response"]["body"] for line in dst.read_text().splitlines()]
    assert [b["object"] for b in bodies] == ["response"] * 6 and bodies[0]["output"][0]["content"][0]["text"] == "l0"


def test_a_bridged_stream_gives_responses_events_and_the_final_response(server: FakeServer) -> None:
    from holysheep.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent

    with Client(base_url=server.url, api_key=KEY) as client:
        client.responses.bridge = "always"
        with client.responses.stream(model="m", input="one two three", instructions="x") as stream:
            events = list(stream)
            final = stream.get_final_response()
        kinds = [e.type for e in events]
        assert kinds[:3] == ["response.created", "response.output_item.added", "response.content_part.added"]
        assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                              "response.output_item.done", "response.completed"]
        assert "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)) == "one two three"
        last = events[-1]
        assert isinstance(last, ResponseCompletedEvent) and last.response.output_text == "one two three"
        assert final.output_text == "one two three" and final.usage is not None and final.usage.output_tokens == 3
        assert [e.sequence_number for e in events] == list(range(len(events)))
        sent = next(r.body for r in server.requests if r.path == "/v1/chat/completions")
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}  # type: ignore[index]


def test_a_bridged_stream_carries_function_call_arguments(server: FakeServer) -> None:
    from holysheep.types.responses import ResponseFunctionCallArgumentsDeltaEvent

    server.reply = ScriptedReply("", tool_calls=[tool_call("f", {"city": "Paris"}, id="call_3")])  # type: ignore[assignment]
    with Client(base_url=server.url, api_key=KEY) as client:
        client.responses.bridge = "always"
        stream = client.responses.create(model="m", input="x", stream=True,
                                         tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}}])
        with stream:
            events = list(stream)
    args = "".join(e.delta for e in events if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent))
    assert json.loads(args) == {"city": "Paris"}
    done = [e for e in events if e.type == "response.output_item.done"]
    assert [(e.item.call_id, e.item.name) for e in done] == [("call_3", "f")]  # type: ignore[union-attr]

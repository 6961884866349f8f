"""Scripted tool calls, reply scripts (list, file, JSON Lines) and the automatic structured mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from holysheep.testing import FakeServer, Script, ScriptedReply, auto_reply, tool_call, tool_reply
from holysheep.testing.pytest_plugin import holysheep_script, holysheep_structured_server  # noqa: F401

from .conftest import chat_body, client_for

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"], "additionalProperties": False}}}


def _post(server: FakeServer, body: dict[str, Any]) -> dict[str, Any]:
    with client_for(server) as c:
        response = c.post("/chat/completions", json=body)
        assert response.status_code == 200
        data: dict[str, Any] = response.json()
        return data


def _stream_lines(server: FakeServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client_for(server) as c:
        text = c.post("/chat/completions", json={**body, "stream": True}).text
    return [json.loads(line[6:]) for line in text.split("\n\n") if line.startswith("data: {")]


def test_tool_reply_is_a_tool_call_completion() -> None:
    reply = tool_reply(tool_call("get_weather", {"city": "Paris"}, id="call_1"),
                       tool_call("get_weather", {"city": "Oslo"}, id="call_2"))
    with FakeServer(reply=reply) as server:
        data = _post(server, chat_body("weather?", max_tokens=1))  # max_tokens never cuts tool arguments
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}},
    ]
    assert data["usage"]["completion_tokens"] == 2  # one "word" per arguments string


def test_streamed_tool_calls_fold_back_to_the_arguments() -> None:
    args = {"city": "San Francisco, California", "days": 14}
    reply = tool_reply(tool_call("get_weather", args, id="call_a"), tool_call("noop", {}, id="call_b"))
    with FakeServer(reply=reply) as server:
        chunks = _stream_lines(server, chat_body("x"))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    heads = [d["tool_calls"][0] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert [(h["index"], h["id"], h["function"]["name"]) for h in heads] == [(0, "call_a", "get_weather"),
                                                                            (1, "call_b", "noop")]
    pieces: dict[int, str] = {0: "", 1: ""}
    for d in deltas:
        for call in d.get("tool_calls", ()):
            pieces[call["index"]] += call["function"]["arguments"]
    assert json.loads(pieces[0]) == args and pieces[1] == "{}"
    assert sum(1 for d in deltas if "tool_calls" in d and "id" not in d["tool_calls"][0]) > 2  # in pieces
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def _conversation(user: str, *turns: tuple[str, str]) -> dict[str, Any]:
    """A tool loop's messages: the user, then (tool call id, tool result) per assistant turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for call_id, result in turns:
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return {"model": "m", "messages": messages}


def test_script_matches_the_last_user_message_and_counts_turns() -> None:
    script = Script([
        {"match": "weather", "replies": [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
                                         "It is {tool_results}."]},
        {"match": "hello", "reply": "Hi!"},
        "first in order", {"json": {"a": 1}},
    ])
    with FakeServer(reply=script) as server:
        first = _post(server, _conversation("What's the WEATHER in Paris?"))
        assert first["choices"][0]["message"]["tool_calls"][0]["function"] == {
            "name": "get_weather", "arguments": '{"city":"Paris"}'}
        # the same question again (a retry, another conversation) gets the same first turn: stateless
        assert _post(server, _conversation("weather please"))["choices"][0]["finish_reason"] == "tool_calls"
        after = _post(server, _conversation("weather in Paris", ("c1", "18C")))
        assert after["choices"][0]["message"]["content"] == "It is 18C."
        assert _post(server, _conversation("hello there"))["choices"][0]["message"]["content"] == "Hi!"
        contents = [_post(server, _conversation(f"other {i}"))["choices"][0]["message"]["content"] for i in range(3)]
    assert contents == ["first in order", '{"a":1}', "other 2"]  # in order, then the fallback (echo)


@pytest.mark.parametrize("form", ["json", "jsonl", "object"])
def test_script_file_forms(tmp_path: Path, form: str) -> None:
    entries = [{"match": "ping", "reply": "pong"}, {"content": "in order"}]
    path = tmp_path / "script.json"
    if form == "json":
        path.write_text(json.dumps(entries))
    elif form == "jsonl":
        path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    else:
        path.write_text(json.dumps({"replies": entries}))
    script = Script.load(path)
    assert script({"messages": [{"role": "user", "content": "PING"}]}).content == "pong"
    assert script({"messages": [{"role": "user", "content": "x"}]}).content == "in order"


def test_script_errors_name_the_file_and_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"match": "a", "replies": []}]))
    with pytest.raises(ValueError, match=r"bad\.json: script entry 1: needs \"reply\""):
        Script.load(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"bad\.json: not JSON or JSON Lines"):
        Script.load(path)


def test_auto_reply_calls_the_tool_then_answers_with_the_results() -> None:
    answer = auto_reply()
    first = answer({**_conversation("weather?"), "tools": [WEATHER]})
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls[0]["name"] == "get_weather"
    assert json.loads(first.tool_calls[0]["arguments"]) == {"city": "example", "days": 1}
    after = answer({**_conversation("weather?", ("c1", "sunny")), "tools": [WEATHER]})
    assert after == ScriptedReply("Tool results: sunny")
    assert answer({**_conversation("weather?"), "tools": [WEATHER], "tool_choice": "none"}).content == "weather?"


def test_auto_reply_uses_the_named_tool_and_the_response_format() -> None:
    other = {"type": "function", "function": {"name": "other", "parameters": {"type": "object", "properties": {}}}}
    body = {**_conversation("q"), "tools": [other, WEATHER],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    assert auto_reply()(body).tool_calls[0]["name"] == "get_weather"
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}
    assert auto_reply()({**_conversation("q"), "response_format": fmt}).content == '{"n":0}'


def test_structured_fixture(holysheep_structured_server: FakeServer) -> None:  # noqa: F811
    data = _post(holysheep_structured_server, {**chat_body("weather?"), "tools": [WEATHER]})
    assert data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_script_fixture(holysheep_script: Any) -> None:  # noqa: F811
    server = holysheep_script([{"match": "ping", "reply": "pong"}], structured=True)
    assert _post(server, chat_body("ping"))["choices"][0]["message"]["content"] == "pong"
    data = _post(server, {**chat_body("weather?"), "tools": [WEATHER]})  # not in the script: auto_reply
    assert data["choices"][0]["finish_reason"] == "tool_calls"

"""``client.chat.completions.stream(...)``: openai's event names, fields and order, and the final completion."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pydantic
import pytest

from holysheep import AsyncClient, Client, StructuredOutputError

KEY = "hs_TestKey0123456789abcdefWXYZ"
MESSAGES = [{"role": "user", "content": "Hi"}]


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


TEXT = sse(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hel"}), _chunk({"content": "lo"}),
           _chunk({}, "stop"))
REASONING = sse(_chunk({"role": "assistant", "reasoning_content": "think "}), _chunk({"reasoning_content": "hard"}),
                _chunk({"content": "42"}), _chunk({}, "stop"))
REFUSAL = sse(_chunk({"role": "assistant", "refusal": "I can"}), _chunk({"refusal": "not."}), _chunk({}, "stop"))
TOOLS = sse(
    _chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "t0", "type": "function",
                                                 "function": {"name": "get_weather", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
    _chunk({"tool_calls": [{"index": 1, "id": "t1", "type": "function",
                            "function": {"name": "get_time", "arguments": "{}"}}]}),
    _chunk({}, "tool_calls"),
)
WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
    "additionalProperties": False}}}


class City(pydantic.BaseModel):
    name: str
    population: int


STRUCTURED = sse(_chunk({"role": "assistant", "content": '{"name": "Pa'}),
                 _chunk({"content": 'ris", "population": 2100000}'}), _chunk({}, "stop"))


def _sync(body: bytes, seen: list[dict[str, Any]] | None = None) -> Client:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(json.loads(request.content))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    return Client(api_key=KEY, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def _events(body: bytes, **params: Any) -> tuple[list[Any], Any]:
    with _sync(body) as client, client.chat.completions.stream(model="m", messages=MESSAGES, **params) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    return events, final


def test_content_events_and_final_completion() -> None:
    events, final = _events(TEXT)
    assert [e.type for e in events] == ["chunk", "content.delta", "chunk", "content.delta", "chunk",
                                        "content.delta", "chunk", "content.done"]
    deltas = [e for e in events if e.type == "content.delta"]
    assert [(e.delta, e.snapshot) for e in deltas] == [("", ""), ("Hel", "Hel"), ("lo", "Hello")]
    assert events[-1].content == "Hello" and events[-1].parsed is None
    assert events[-2].snapshot.choices[0].message.content == "Hello"
    assert final.choices[0].message.content == "Hello"
    assert final.choices[0].finish_reason == "stop"


def test_refusal_events() -> None:
    events, final = _events(REFUSAL)
    refusal = [(e.type, getattr(e, "delta", None), getattr(e, "snapshot", None)) for e in events
               if e.type.startswith("refusal")]
    assert refusal == [("refusal.delta", "I can", "I can"), ("refusal.delta", "not.", "I cannot."),
                       ("refusal.done", None, None)]
    assert [e.refusal for e in events if e.type == "refusal.done"] == ["I cannot."]
    assert final.choices[0].message.refusal == "I cannot."


def test_tool_call_argument_events() -> None:
    events, final = _events(TOOLS, tools=[WEATHER_TOOL])
    tools = [e for e in events if e.type.startswith("tool_calls")]
    assert [(e.type.rsplit(".", 1)[1], e.name, e.index) for e in tools] == [
        ("delta", "get_weather", 0), ("delta", "get_weather", 0), ("delta", "get_weather", 0),
        ("delta", "get_time", 1), ("done", "get_weather", 0), ("done", "get_time", 1)]
    assert [e.arguments_delta for e in tools if e.type.endswith("delta")] == ["", '{"city": ', '"Paris"}', "{}"]
    assert tools[2].arguments == '{"city": "Paris"}'
    assert tools[2].parsed_arguments == {"city": "Paris"}  # strict tool: partial JSON decoded as it grows
    assert tools[4].parsed_arguments == {"city": "Paris"}  # strict tool: decoded
    assert tools[5].parsed_arguments is None  # not a strict tool
    calls = final.choices[0].message.tool_calls
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("t0", "get_weather", '{"city": "Paris"}'), ("t1", "get_time", "{}")]


def test_response_format_model() -> None:
    seen: list[dict[str, Any]] = []
    with _sync(STRUCTURED, seen) as client, client.chat.completions.stream(
            model="m", messages=MESSAGES, response_format=City) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    assert seen[0]["response_format"]["type"] == "json_schema" and seen[0]["stream"] is True
    partial = [e.parsed for e in events if e.type == "content.delta"]
    assert partial == [{}, {"name": "Paris", "population": 2100000}]  # an unfinished string is left out, as in openai
    done = next(e for e in events if e.type == "content.done")
    assert done.parsed == City(name="Paris", population=2100000)
    assert final.choices[0].message.parsed == City(name="Paris", population=2100000)


def test_response_format_mismatch_is_typed() -> None:
    bad = sse(_chunk({"role": "assistant", "content": '{"name": 3}'}), _chunk({}, "stop"))
    with pytest.raises(StructuredOutputError), _sync(bad) as client, client.chat.completions.stream(
            model="m", messages=MESSAGES, response_format=City) as stream:
        for _ in stream:
            pass


def test_reasoning_events_and_final() -> None:
    events, final = _events(REASONING)
    kinds = [e.type for e in events if e.type != "chunk"]
    assert kinds == ["reasoning.delta", "reasoning.delta", "reasoning.done", "content.delta", "content.done"]
    assert final.choices[0].message.reasoning_content == "think hard"
    assert final.choices[0].message.content == "42"


def test_get_final_completion_without_iterating_and_until_done() -> None:
    with _sync(TEXT) as client:
        with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            assert stream.get_final_completion().choices[0].message.content == "Hello"
        with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            stream.until_done()
            assert stream.current_completion_snapshot.choices[0].message.content == "Hello"


def test_bad_arguments_raise_before_any_request() -> None:
    from holysheep import InvalidRequestError

    seen: list[dict[str, Any]] = []
    with _sync(TEXT, seen) as client, pytest.raises(InvalidRequestError):
        client.chat.completions.stream(model="m", messages=MESSAGES, temperature=9)
    assert seen == []


def test_async_stream_helper() -> None:
    async def main() -> tuple[list[str], Any]:
        async def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=TOOLS, headers={"content-type": "text/event-stream"})

        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with AsyncClient(api_key=KEY, http_client=http) as client, client.chat.completions.stream(
                model="m", messages=MESSAGES, tools=[WEATHER_TOOL]) as stream:
            kinds = [e.type async for e in stream]
            final = await stream.get_final_completion()
        return kinds, final

    kinds, final = asyncio.run(main())
    assert kinds.count("tool_calls.function.arguments.done") == 2
    assert final.choices[0].message.tool_calls[0].function.arguments == '{"city": "Paris"}'


def test_matches_openai_event_names_and_fields() -> None:
    """The same SSE through openai-python's own helper gives the same event types and fields."""
    openai = pytest.importorskip("openai")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=TOOLS if b"tools" in request.content else TEXT,
                              headers={"content-type": "text/event-stream"})

    theirs = openai.OpenAI(api_key="sk-test", base_url="http://test/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    for params in ({}, {"tools": [WEATHER_TOOL]}):
        with theirs.chat.completions.stream(model="m", messages=MESSAGES, **params) as stream:
            expected = [(e.type, sorted(set(type(e).model_fields) - {"snapshot", "chunk"})) for e in stream]
        body = TOOLS if params else TEXT
        ours, _ = _events(body, **params)
        assert [(e.type, sorted(set(type(e).model_fields) - {"snapshot", "chunk"})) for e in ours] == expected


def test_beta_alias_for_older_openai_code() -> None:
    seen: list[dict[str, Any]] = []
    with _sync(STRUCTURED, seen) as client:
        assert client.beta.chat.completions is client.chat.completions
        with client.beta.chat.completions.stream(model="m", messages=MESSAGES, response_format=City) as stream:
            assert stream.get_final_completion().choices[0].message.parsed == City(name="Paris", population=2100000)
    async_client = AsyncClient(api_key=KEY)
    assert async_client.beta.chat.completions is async_client.chat.completions
    assert async_client.beta.chat.completions.parse == async_client.chat.completions.parse

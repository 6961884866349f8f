"""The stream() helper with typed tools, on both clients: each tool_calls.function.arguments.done event carries
the tool's model instance; the final completion's tool calls are parsed; invalid arguments raise
ToolArgumentsError naming the field."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from holysheep import AsyncClient, Client, ToolArgumentsError, pydantic_function_tool
from holysheep.testing import FakeServer, tool_call, tool_reply

from .conftest import user


class GetWeather(BaseModel):
    """Weather for a city."""

    city: str
    days: int = 1


RAW = {"type": "function", "function": {"name": "raw", "strict": True, "parameters": {"type": "object"}}}


def stream_events(kind: str, server: FakeServer, **kwargs: Any) -> tuple[list[Any], Any]:
    kwargs.setdefault("model", "gpt-4.1")
    if kind == "sync":
        with Client(api_key=server.api_key, base_url=server.url) as client, \
                client.chat.completions.stream(**kwargs) as stream:
            events = list(stream)
            return events, stream.get_final_completion()

    async def go() -> tuple[list[Any], Any]:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client, \
                client.chat.completions.stream(**kwargs) as stream:
            events = [event async for event in stream]
            return events, await stream.get_final_completion()

    return asyncio.run(go())


def test_done_events_and_final_completion_carry_the_model(kind: str) -> None:
    reply = tool_reply(tool_call("GetWeather", {"city": "San Francisco, California", "days": 5}),
                       tool_call("raw", {"x": 1}))
    with FakeServer(reply=reply) as server:
        events, final = stream_events(kind, server, messages=user("w"),
                                      tools=[pydantic_function_tool(GetWeather), RAW])
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert [(e.name, e.parsed_arguments) for e in done] == [
        ("GetWeather", GetWeather(city="San Francisco, California", days=5)), ("raw", {"x": 1})]
    calls = final.choices[0].message.tool_calls
    assert calls[0].function.parsed_arguments == GetWeather(city="San Francisco, California", days=5)
    assert calls[1].function.parsed_arguments is None  # a raw dict tool: only the JSON string


def test_invalid_streamed_arguments_raise(kind: str) -> None:
    with FakeServer(reply=tool_reply(tool_call("GetWeather", {"city": 7}))) as server, \
            pytest.raises(ToolArgumentsError) as info:
        stream_events(kind, server, messages=user("w"), tools=[pydantic_function_tool(GetWeather)])
    assert info.value.field == "city" and info.value.raw_arguments == '{"city":7}'


class Answer(BaseModel):
    text: str


def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city."""
    return city


def test_with_response_format_plain_functions_and_models_are_typed_tools(kind: str) -> None:
    """With ``response_format=Model``, stream() takes functions and model classes as tools (typed so): they are
    sent as strict tools, and their calls' done events and final tool calls carry the arguments' model."""
    reply = tool_reply(tool_call("get_weather", {"city": "Paris", "days": 2}),
                       tool_call("GetWeather", {"city": "Lima", "days": 1}))
    with FakeServer(reply=reply) as server:
        events, final = stream_events(kind, server, messages=user("w"), response_format=Answer,
                                      tools=[get_weather, GetWeather])
        sent = server.requests[-1].body["tools"]
    assert [(t["function"]["name"], t["function"]["strict"]) for t in sent] == [
        ("get_weather", True), ("GetWeather", True)]
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert [(e.name, e.parsed_arguments.model_dump()) for e in done] == [
        ("get_weather", {"city": "Paris", "days": 2}), ("GetWeather", {"city": "Lima", "days": 1})]
    assert isinstance(done[1].parsed_arguments, GetWeather)
    calls = final.choices[0].message.tool_calls
    assert [c.function.parsed_arguments.model_dump() for c in calls] == [
        {"city": "Paris", "days": 2}, {"city": "Lima", "days": 1}]

"""parse(tools=[...]) on both clients: parsed_arguments, with and without response_format, typed errors with
the field and the raw arguments, max_repairs for tool arguments, and parse(stream=True)'s final completion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from holysheep import AsyncClient, Client, InvalidRequestError, ToolArgumentsError, pydantic_function_tool
from holysheep.testing import FakeServer, Script, auto_reply, tool_call, tool_reply

from .conftest import call, user


class GetWeather(BaseModel):
    """Get the weather for a city."""

    city: str
    days: int = 1


class Person(BaseModel):
    name: str


def parse(kind: str, server: FakeServer, **kwargs: Any) -> Any:
    kwargs.setdefault("model", "gpt-4.1")
    if kind == "sync":
        with Client(api_key=server.api_key, base_url=server.url) as client:
            if kwargs.get("stream"):
                with client.chat.completions.parse(**kwargs) as stream:
                    return stream.get_final_completion()
            return client.chat.completions.parse(**kwargs)

    async def go() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            if kwargs.get("stream"):
                async with await client.chat.completions.parse(**kwargs) as stream:
                    return await stream.get_final_completion()
            return await client.chat.completions.parse(**kwargs)

    return asyncio.run(go())


def test_pydantic_function_tool_is_strict() -> None:
    tool = pydantic_function_tool(GetWeather, name="weather", description="Weather by city.")
    assert tool == {"type": "function", "function": {
        "name": "weather", "description": "Weather by city.", "strict": True, "parameters": {
            "type": "object", "description": "Get the weather for a city.",
            "properties": {"city": {"type": "string"}, "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
            "required": ["city", "days"], "additionalProperties": False}}}
    assert pydantic_function_tool(GetWeather)["function"]["name"] == "GetWeather"
    assert pydantic_function_tool(GetWeather)["function"]["description"] == "Get the weather for a city."
    with pytest.raises(InvalidRequestError, match="needs a pydantic model class"):
        pydantic_function_tool(dict)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="must be 1-64 letters"):
        pydantic_function_tool(GetWeather, name="get weather")


def test_function_tool_from_hints_and_docstring() -> None:
    from holysheep import function_tool

    def search(query: str, limit: int = 5, *, exact: bool | None = None) -> list[str]:
        """Search the catalog.

        Args:
            query: What to look for.
            limit: At most this many
                results.
        """
        return []

    tool = function_tool(search)
    fn = tool["function"]
    assert fn["name"] == "search" and fn["description"] == "Search the catalog." and fn["strict"] is True
    props = fn["parameters"]["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"] == {"anyOf": [{"type": "integer", "description": "At most this many results."},
                                        {"type": "null"}]}
    assert fn["parameters"]["required"] == ["query", "limit", "exact"]
    value = tool.validate_arguments('{"query":"x","limit":null,"exact":null}')
    assert (value.query, value.limit, value.exact) == ("x", 5, None)  # null on a defaulted field: the default

    def untyped(a, b: int) -> None:  # type: ignore[no-untyped-def]
        """No hint on a."""

    with pytest.raises(InvalidRequestError, match="parameter 'a' has no type hint"):
        function_tool(untyped)

    def star(*args: int) -> None:
        """Varargs."""

    with pytest.raises(InvalidRequestError, match="named arguments only"):
        function_tool(star)


def test_parse_with_tools_and_no_response_format(kind: str) -> None:
    reply = tool_reply(tool_call("GetWeather", {"city": "Paris", "days": 3}), tool_call("raw", {"x": 1}))
    raw = {"type": "function", "function": {"name": "raw", "parameters": {"type": "object"}}}
    with FakeServer(reply=reply) as server:
        result = parse(kind, server, messages=user("weather"), tools=[pydantic_function_tool(GetWeather), raw])
        body = server.requests[0].body
    assert "response_format" not in body and body["tools"][0]["function"]["strict"] is True
    calls = result.choices[0].message.tool_calls
    assert calls[0].function.parsed_arguments == GetWeather(city="Paris", days=3)
    assert calls[1].function.parsed_arguments is None and calls[1].function.arguments == '{"x":1}'
    assert result.choices[0].message.parsed is None


def test_parse_with_tools_and_response_format(kind: str) -> None:
    with FakeServer(reply=auto_reply()) as server:
        first = parse(kind, server, messages=user("who"), response_format=Person,
                      tools=[pydantic_function_tool(GetWeather)])
        answer = parse(kind, server, messages=user("who"), response_format=Person,
                       tools=[pydantic_function_tool(GetWeather)], tool_choice="none")
    assert first.choices[0].message.tool_calls[0].function.parsed_arguments == GetWeather(city="example", days=0)
    assert answer.choices[0].message.parsed == Person(name="example")


def test_invalid_arguments_raise_a_typed_error(kind: str) -> None:
    bad = tool_reply(tool_call("GetWeather", {"city": "Paris", "days": "many"}, id="call_x"))
    with FakeServer(reply=bad) as server, pytest.raises(ToolArgumentsError) as info:
        parse(kind, server, messages=user("w"), tools=[pydantic_function_tool(GetWeather)])
    err = info.value
    assert (err.tool_name, err.tool_call_id, err.field) == ("GetWeather", "call_x", "days")
    assert err.raw_arguments == '{"city":"Paris","days":"many"}' == err.raw_text
    assert err.validation_error is not None and err.attempts == 1
    assert "- days: Input should be a valid integer" in str(err) and "max_repairs=1" in str(err)


def test_max_repairs_re_asks_for_tool_arguments(kind: str) -> None:
    script = Script([{"match": "w", "replies": [{"tool_calls": [call("GetWeather", city=3)]}]}])
    fixed = tool_reply(tool_call("GetWeather", {"city": "Rome", "days": 2}))
    seen: list[int] = []

    def answer(body: dict[str, Any]) -> Any:
        seen.append(len(body["messages"]))
        return script(body) if len(seen) == 1 else fixed

    with FakeServer(reply=answer) as server:
        result = parse(kind, server, messages=user("w"), tools=[pydantic_function_tool(GetWeather)], max_repairs=1)
        repair = server.requests[1].body["messages"][-1]
    assert seen == [1, 2] and result.repairs == 1
    assert repair["role"] == "user"
    assert repair["content"].startswith("Your call of the tool 'GetWeather' had invalid arguments {\"city\":3}:")
    assert "- city: Input should be a valid string" in repair["content"]
    assert result.choices[0].message.tool_calls[0].function.parsed_arguments == GetWeather(city="Rome", days=2)
    assert result.usage.total_tokens == sum(a.usage.total_tokens for a in result.attempts)


def test_streamed_tool_calls_are_parsed(kind: str) -> None:
    reply = tool_reply(tool_call("GetWeather", {"city": "San Francisco, California", "days": 10}),
                       tool_call("GetWeather", {"city": "Lisbon"}))
    with FakeServer(reply=reply) as server:
        final = parse(kind, server, messages=user("w"), tools=[pydantic_function_tool(GetWeather)], stream=True)
    calls = final.choices[0].message.tool_calls
    assert [c.function.parsed_arguments for c in calls] == [GetWeather(city="San Francisco, California", days=10),
                                                            GetWeather(city="Lisbon")]


def test_streamed_invalid_arguments_raise(kind: str) -> None:
    bad = tool_reply(tool_call("GetWeather", "{not json"))
    with FakeServer(reply=bad) as server, pytest.raises(ToolArgumentsError) as info:
        parse(kind, server, messages=user("w"), tools=[pydantic_function_tool(GetWeather)], stream=True)
    assert info.value.raw_arguments == "{not json" and info.value.field == "(root)"


def test_parse_needs_a_format_or_tools(kind: str) -> None:
    with FakeServer() as server:
        with pytest.raises(InvalidRequestError, match="needs response_format"):
            parse(kind, server, messages=user("w"))
        assert server.requests == []

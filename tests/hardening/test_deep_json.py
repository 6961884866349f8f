"""Deep JSON from a server or a model (1,000 levels of nesting in 2 KB) is a typed error, never a bare
``RecursionError``: an error text for the model in the tool loop (``run_tools``, batch agents),
`StructuredOutputError` / `ToolArgumentsError` from ``parse()`` and batch items, the HTTP error of an error body,
and a ``ValueError`` from ``.json()``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from holysheep import (
    APIResponseValidationError,
    AsyncClient,
    BadRequestError,
    Client,
    StructuredOutputError,
    ToolArgumentsError,
    pydantic_function_tool,
)
from holysheep._core.json_check import MAX_JSON_DEPTH, JSONTooDeepError, load_json
from holysheep.testing import FakeServer, Script

from .conftest import chat
from .hostile import HostileServer, Req, fixed, head

DEEP = "[" * 1000 + "]" * 1000
DEEP_ARGS = '{"items": ' + DEEP + "}"
TOO_DEEP = ("Error: invalid arguments for 'count': (root): Invalid JSON: recursion limit exceeded at line 1 column "
            "211. Call the tool again with corrected arguments.")


class Items(BaseModel):
    items: list[Any]


def count(items: list[Any]) -> str:
    """Count the items."""
    return str(len(items))


def deep_call(name: str = "count") -> dict[str, Any]:
    return {"tool_calls": [{"id": "call_1", "name": name, "arguments": DEEP_ARGS}]}


def test_load_json_bounds_depth_and_keeps_json_semantics() -> None:
    assert load_json('{"a": [1, 2.5, "\\u00e9"], "a2": null}') == {"a": [1, 2.5, "\u00e9"], "a2": None}
    assert load_json('"\\ud800"') == "\ud800"  # json's leniency kept (pydantic-core refuses lone surrogates)
    assert load_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    for deep in (DEEP, '["\\ud800", ' + DEEP + "]"):  # the second goes through json.loads
        with pytest.raises(JSONTooDeepError, match="deeper than 200 levels"):
            load_json(deep)
    with pytest.raises(ValueError, match="Extra data"):  # json's own message for text that is not JSON
        load_json("[1] x")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_run_tools_sends_deep_arguments_back_as_an_error_text(kind: str) -> None:
    script = Script([{"match": "go", "replies": [deep_call(), "saw: {tool_results}"]}])
    messages = [{"role": "user", "content": "go"}]
    with FakeServer(reply=script) as server:
        if kind == "sync":
            with Client(api_key=server.api_key, base_url=server.url) as client:
                result = client.chat.completions.run_tools(model="m", messages=messages, tools=[count])
        else:
            async def go() -> Any:
                async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                    return await client.chat.completions.run_tools(model="m", messages=messages, tools=[count])

            result = asyncio.run(go())
    assert result.tool_calls[0].error == TOO_DEEP and result.tool_calls[0].output is None
    assert result.content == f"saw: {TOO_DEEP}"


def test_parse_raises_the_structured_errors() -> None:
    deep_content = '{"items": ' + DEEP + "}"
    schema = {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"],
              "additionalProperties": False}
    script = Script([{"match": "tool", "reply": deep_call("Items")}, {"match": "", "reply": deep_content}])
    with FakeServer(reply=script) as server, Client(api_key=server.api_key, base_url=server.url,
                                                    max_retries=0) as client:
        for fmt in (Items, {"type": "json_schema", "json_schema": {"name": "items", "schema": schema,
                                                                   "strict": True}}):
            with pytest.raises(StructuredOutputError) as info:
                client.chat.completions.parse(model="m", messages=[{"role": "user", "content": "x"}],
                                              response_format=fmt)  # type: ignore[call-overload]
            assert info.value.raw_text == deep_content
        with pytest.raises(ToolArgumentsError) as tool_info:
            client.chat.completions.parse(model="m", messages=[{"role": "user", "content": "tool"}],
                                          tools=[pydantic_function_tool(Items)])
        assert tool_info.value.raw_arguments == DEEP_ARGS and tool_info.value.tool_name == "Items"


def test_batch_items_end_with_typed_errors_and_agents_get_the_error_text() -> None:
    script = Script([{"match": "agent", "replies": [deep_call(), "saw: {tool_results}"]},
                     {"match": "", "reply": '{"items": ' + DEEP + "}"}])
    with FakeServer(reply=script) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        parsed = client.chat.completions.batch(["x"], model="m", response_format=Items, check_quota=False)
        agents = client.chat.completions.batch(["agent"], model="m", tools=[count], check_quota=False)
    assert isinstance(parsed[0].error, StructuredOutputError)
    assert agents[0].ok and agents[0].response.choices[0].message.content == f"saw: {TOO_DEEP}"


def test_a_deep_error_body_is_the_http_error() -> None:
    body = ('{"error": {"message": "bad", "detail": ' + DEEP + "}}").encode()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(400, body))

    with HostileServer(scenario) as srv, pytest.raises(BadRequestError) as info:
        chat("sync", srv.url)
    assert info.value.status_code == 400


def test_a_deep_stream_event_is_a_typed_error(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + b'data: {"error": ' + DEEP.encode() + b"}\n\n")

    with HostileServer(scenario) as srv, pytest.raises(APIResponseValidationError):
        chat(kind, srv.url, stream=True)


def test_json_of_a_deep_body_is_a_value_error() -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, DEEP.encode()))

    with HostileServer(scenario) as srv, Client(api_key="k", base_url=srv.url, max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(model="m", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(JSONTooDeepError):
            raw.json()

"""``ChatParams.response_format`` and ``RunToolsParams.response_format`` are typed as ``create()`` and
``run_tools()`` run them (``Mapping[str, Any] | type[Any]``, as `BatchResponseFormat`): ``list[Model]`` and
a ``TypedDict`` class go out as the strict ``json_schema`` envelope, a read-only mapping or a ``TypedDict``
envelope as JSON, as given. examples/extract_batch.py type-checks two of them (``mypy --strict examples``)."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer, ScriptedReply, json_reply

MODEL = "gpt-4.1"
MESSAGES = [{"role": "user", "content": "x"}]


class Person(BaseModel):
    name: str
    age: int


class PersonDict(TypedDict):
    name: str
    age: int


class Envelope(TypedDict):
    type: str


def reply(body: dict[str, Any]) -> ScriptedReply:
    return json_reply({"name": "a", "age": 1})


def lookup(name: str) -> str:
    """Look a name up."""
    return name


def sent_formats(server: FakeServer) -> list[Any]:
    return [r.body["response_format"] for r in server.requests if r.path.endswith("/chat/completions")]


def check(sent: list[Any]) -> None:
    wrapped, typed_dict, proxy, envelope = sent
    assert wrapped["type"] == "json_schema" and wrapped["json_schema"]["strict"] is True
    assert list(wrapped["json_schema"]["schema"]["properties"]) == ["value"]  # a list root, wrapped
    assert typed_dict["type"] == "json_schema"
    assert sorted(typed_dict["json_schema"]["schema"]["properties"]) == ["age", "name"]
    assert proxy == envelope == {"type": "json_object"}  # sent as given, as JSON


def formats() -> list[Any]:
    envelope: Envelope = {"type": "json_object"}
    return [list[Person], PersonDict, MappingProxyType({"type": "json_object"}), envelope]


def test_create_and_run_tools_send_every_response_format_their_type_allows() -> None:
    with FakeServer(reply=reply) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        for response_format in formats():
            completion = client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                                        response_format=response_format)
            assert completion.choices[0].message.content == '{"name":"a","age":1}'
        for response_format in formats():
            result = client.chat.completions.run_tools(model=MODEL, messages=MESSAGES, tools=[lookup],
                                                       response_format=response_format)
            assert result.content == '{"name":"a","age":1}'
        sent = sent_formats(server)
    check(sent[:4])  # create()
    check(sent[4:])  # run_tools()


def test_the_async_client_sends_them_alike() -> None:
    async def go(server: FakeServer) -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            for response_format in formats():
                await client.chat.completions.create(model=MODEL, messages=MESSAGES, response_format=response_format)
            for response_format in formats():
                await client.chat.completions.run_tools(model=MODEL, messages=MESSAGES, tools=[lookup],
                                                        response_format=response_format)

    with FakeServer(reply=reply) as server:
        asyncio.run(go(server))
        sent = sent_formats(server)
    check(sent[:4])
    check(sent[4:])

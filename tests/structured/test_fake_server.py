"""FakeServer answers structured requests offline: given JSON, a schema example, a violation, a refusal."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from holysheep import (
    AsyncClient,
    Client,
    LengthFinishReasonError,
    RefusalError,
    StructuredOutputError,
)
from holysheep._core.schema import response_format_for
from holysheep.testing import (
    FakeServer,
    json_reply,
    refusal_reply,
    reply_sequence,
    schema_example,
    schema_reply,
)

MESSAGES = [{"role": "user", "content": "Extract: Ann Lee, 31, lives at 1 Main St, Oslo."}]


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    age: int
    nickname: str | None = None
    address: Address
    tags: list[str]


def client_for(server: FakeServer) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, allow_insecure_http=True)


def test_json_reply_is_parsed_into_the_model() -> None:
    value = {"name": "Ann Lee", "age": 31, "nickname": None, "address": {"street": "1 Main St", "city": "Oslo"},
             "tags": ["vip"]}
    with FakeServer(reply=json_reply(value)) as server, client_for(server) as client:
        result = client.chat.completions.parse(model="gpt-4.1", messages=MESSAGES, response_format=Person)
    assert result.choices[0].message.parsed == Person.model_validate(value)
    sent = server.requests[0].body
    assert sent["response_format"] == response_format_for(Person).param


def test_schema_example_satisfies_the_strict_schema() -> None:
    schema = response_format_for(Person).param["json_schema"]["schema"]
    assert schema_example(schema) == {"name": "example", "age": 0, "nickname": "example",
                                      "address": {"street": "example", "city": "example"}, "tags": ["example"]}
    Person.model_validate(schema_example(schema))


def test_schema_reply_answers_each_request_from_its_own_schema() -> None:
    with FakeServer(reply=schema_reply(overrides={"name": "Ann"})) as server, client_for(server) as client:
        person = client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person)
        address = client.chat.completions.parse(model="m", messages=MESSAGES, response_format=list[Address])
    assert person.choices[0].message.parsed == Person(name="Ann", age=0, nickname="example",
                                                      address=Address(street="example", city="example"),
                                                      tags=["example"])
    assert address.choices[0].message.parsed == [Address(street="example", city="example")]


def test_schema_violation_raises_structured_output_error() -> None:
    with FakeServer(reply=schema_reply(violate=True)) as server, client_for(server) as client, \
            pytest.raises(StructuredOutputError) as info:
        client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person)
    assert [e["loc"] for e in info.value.validation_error.errors()] == [("name",)]  # type: ignore[union-attr]
    assert len(server.requests) == 1


def test_violation_then_valid_is_repaired_with_one_re_ask() -> None:
    spec = reply_sequence(schema_reply(violate=True), schema_reply())
    with FakeServer(reply=spec) as server, client_for(server) as client:
        result = client.chat.completions.parse(model="gpt-4.1", messages=MESSAGES, response_format=Person,
                                               max_repairs=2)
    assert len(server.requests) == 2 and result.repairs == 1
    first, second = (r.body for r in server.requests)
    assert second["messages"][:1] == first["messages"]
    assert second["messages"][2]["content"].startswith("Your previous reply does not match")
    assert result.usage is not None
    usages = [a.usage for a in result.attempts]
    assert result.usage.total_tokens == sum(u.total_tokens for u in usages if u is not None)


def test_refusal_reply_plain_and_streamed() -> None:
    async def streamed(server: FakeServer) -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, allow_insecure_http=True) as client:
            stream = await client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person,
                                                         stream=True, on_refusal="raise")
            async with stream:
                await stream.get_final_completion()

    with FakeServer(reply=refusal_reply("No.")) as server:
        with client_for(server) as client:
            returned = client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person)
            assert (returned.choices[0].message.refusal, returned.choices[0].message.parsed) == ("No.", None)
            with pytest.raises(RefusalError) as info:
                client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person,
                                              on_refusal="raise")
        assert info.value.refusal == "No."
        with pytest.raises(RefusalError) as streamed_info:
            asyncio.run(streamed(server))
        assert streamed_info.value.refusal == "No."


def test_max_tokens_cuts_the_json_and_raises_length_error() -> None:
    reply = json_reply({"name": "Ann Lee Smith", "age": 1, "nickname": None,
                        "address": {"street": "a", "city": "b"}, "tags": []})
    with FakeServer(reply=reply) as server, client_for(server) as client, \
            pytest.raises(LengthFinishReasonError):
        client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person, max_tokens=2)


def test_streamed_schema_reply_is_parsed_at_the_end() -> None:
    with FakeServer(reply=schema_reply(), words_per_chunk=1) as server, client_for(server) as client, \
            client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Address,
                                          stream=True) as stream:
        chunks = list(stream)
        final = stream.get_final_completion()
    assert len(chunks) == 3  # role, the one-word JSON, finish
    assert final.choices[0].message.parsed == Address(street="example", city="example")


class TreeNode(BaseModel):
    label: str
    children: list[TreeNode]
    parent: TreeNode | None = None


def test_schema_example_of_a_recursive_model_is_finite_and_valid() -> None:
    schema = response_format_for(TreeNode).param["json_schema"]["schema"]
    assert schema["type"] == "object" and schema["required"] == ["label", "children", "parent"]  # not wrapped
    assert schema["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/TreeNode"}}
    example = schema_example(schema)
    node = TreeNode.model_validate(example)
    depth = 0
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == 4  # each level is two steps of the walk (array, then object); arrays from step 8 are empty

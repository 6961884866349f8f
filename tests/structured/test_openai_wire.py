"""The official ``openai`` client talks structured outputs to FakeServer (dev-only; skipped without openai)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from holysheep._core.schema import response_format_for
from holysheep.testing import FakeServer, json_reply, schema_reply

openai = pytest.importorskip("openai")

MESSAGES = [{"role": "user", "content": "Extract the person: Ann is 31."}]


class Person(BaseModel):
    name: str
    age: int
    nickname: str | None = None


def test_openai_parse_with_a_model_gets_the_parsed_person() -> None:
    with FakeServer(reply=json_reply({"name": "Ann", "age": 31, "nickname": None})) as server, \
            openai.OpenAI(base_url=server.url, api_key=server.api_key, max_retries=0) as client:
        result = client.chat.completions.parse(model="gpt-4.1", messages=MESSAGES, response_format=Person)
    assert result.choices[0].message.parsed == Person(name="Ann", age=31)
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Person"
    assert fmt["json_schema"]["strict"] is True


def test_openai_sends_holysheeps_envelope_byte_for_byte_and_reads_the_schema_reply() -> None:
    envelope = response_format_for(Person).param
    with FakeServer(reply=schema_reply()) as server, \
            openai.OpenAI(base_url=server.url, api_key=server.api_key, max_retries=0) as client:
        completion = client.chat.completions.create(model="gpt-4.1", messages=MESSAGES, response_format=envelope)
    assert server.requests[0].body["response_format"] == envelope
    assert Person.model_validate_json(completion.choices[0].message.content or "") == Person(
        name="example", age=0, nickname="example")


def test_openai_parse_sees_a_schema_violation_as_a_validation_error() -> None:
    import pydantic

    with FakeServer(reply=schema_reply(violate=True)) as server, \
            openai.OpenAI(base_url=server.url, api_key=server.api_key, max_retries=0) as client, \
            pytest.raises(pydantic.ValidationError):
        client.chat.completions.parse(model="gpt-4.1", messages=MESSAGES, response_format=Person)

"""``chat.completions.parse``: what is sent, the parsed result, each failure kind and re-ask counting."""

from __future__ import annotations

from typing import Literal

import httpx
import pytest
import respx
from pydantic import BaseModel, ValidationError

from holysheep import (
    APIResponseValidationError,
    ContentFilterFinishReasonError,
    InvalidRequestError,
    LengthFinishReasonError,
    ParsedChatCompletion,
    RefusalError,
    StructuredOutputError,
)
from holysheep.types import ChatCompletion

from .conftest import MESSAGES, URL, body_of, parse, reply

PERSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "Person", "schema": {
    "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"], "additionalProperties": False}, "strict": True}}


class Person(BaseModel):
    name: str
    age: int


@respx.mock
def test_parse_sends_the_strict_envelope_and_returns_the_model(kind: str) -> None:
    route = respx.post(URL).mock(return_value=reply('{"name": "Ann", "age": 31}'))
    result = parse(kind, response_format=Person, temperature=0)
    assert route.call_count == 1
    assert body_of(route.calls[0].request) == {"model": "gpt-4.1", "messages": MESSAGES, "temperature": 0,
                                               "response_format": PERSON_FORMAT}
    assert isinstance(result, ParsedChatCompletion) and isinstance(result, ChatCompletion)
    assert result.choices[0].message.parsed == Person(name="Ann", age=31)
    assert result.choices[0].message.content == '{"name": "Ann", "age": 31}'
    assert result.request_id == "req_p" and result.repairs == 0 and len(result.attempts) == 1
    assert result.usage is not None and result.usage.total_tokens == 15
    assert result.cost == pytest.approx((10 * 2.00 + 5 * 8.00) / 1e6, rel=1e-12)


@respx.mock
def test_literal_classification_and_list_of_models(kind: str) -> None:
    respx.post(URL).mock(side_effect=[reply('{"value": "spam"}'),
                                      reply('{"value": [{"name": "A", "age": 1}, {"name": "B", "age": 2}]}')])
    label = parse(kind, response_format=Literal["spam", "ham"])
    people = parse(kind, response_format=list[Person])
    assert label.choices[0].message.parsed == "spam"
    assert people.choices[0].message.parsed == [Person(name="A", age=1), Person(name="B", age=2)]


@respx.mock
def test_plain_schema_dict_gives_the_decoded_json(kind: str) -> None:
    route = respx.post(URL).mock(return_value=reply('{"name": "Ann", "age": 31}'))
    schema = {"title": "Person", "type": "object",
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
    result = parse(kind, response_format=schema)
    assert body_of(route.calls[0].request)["response_format"] == PERSON_FORMAT
    assert result.choices[0].message.parsed == {"name": "Ann", "age": 31}


@respx.mock
@pytest.mark.parametrize(("content", "error_type", "loc"), [
    ("Ann is 31", "json_invalid", ()),
    ('{"name": "Ann", "age": "thirty"}', "int_parsing", ("age",)),
    ('{"name": "Ann"}', "missing", ("age",)),
])
def test_invalid_content_raises_structured_output_error(kind: str, content: str, error_type: str,
                                                        loc: tuple[str, ...]) -> None:
    route = respx.post(URL).mock(return_value=reply(content))
    with pytest.raises(StructuredOutputError) as info:
        parse(kind, response_format=Person)
    err = info.value
    assert route.call_count == 1  # a validation failure is not retried (max_repairs=0)
    assert isinstance(err, APIResponseValidationError)
    assert err.raw_text == content and err.attempts == 1 and err.status_code == 200
    assert isinstance(err.validation_error, ValidationError)
    assert [(e["type"], e["loc"]) for e in err.validation_error.errors()] == [(error_type, loc)]
    assert err.completion.choices[0].message.content == content and err.request_id == "req_p"
    assert err.response is err.completion
    assert "max_repairs" in str(err) and "'Person'" in str(err)


@respx.mock
def test_refusal_is_returned_with_parsed_none_as_openai(kind: str) -> None:
    respx.post(URL).mock(return_value=reply(None, refusal="I can't help with that."))
    result = parse(kind, response_format=Person)
    message = result.choices[0].message
    assert (message.refusal, message.parsed, message.content) == ("I can't help with that.", None, None)


@respx.mock
def test_refusal_raises_refusal_error_when_asked(kind: str) -> None:
    respx.post(URL).mock(return_value=reply(None, refusal="I can't help with that."))
    with pytest.raises(RefusalError) as info:
        parse(kind, response_format=Person, on_refusal="raise")
    assert info.value.refusal == "I can't help with that."
    assert info.value.completion.choices[0].message.refusal == "I can't help with that."
    assert "refused" in str(info.value)


@respx.mock
@pytest.mark.parametrize(("finish", "error"), [("length", LengthFinishReasonError),
                                              ("content_filter", ContentFilterFinishReasonError)])
def test_finish_reasons_that_cut_the_json_raise_their_own_error(kind: str, finish: str, error: type) -> None:
    route = respx.post(URL).mock(return_value=reply('{"name": "An', finish=finish))
    with pytest.raises(error) as info:
        parse(kind, response_format=Person, max_repairs=3)
    assert route.call_count == 1  # re-asking cannot fix a cut-off or filtered reply
    assert not isinstance(info.value, StructuredOutputError)
    assert f"finish_reason='{finish}'" in str(info.value)


@respx.mock
def test_tool_call_without_content_parses_to_none(kind: str) -> None:
    tool = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    respx.post(URL).mock(return_value=reply(None, finish="tool_calls", tool_calls=[tool]))
    result = parse(kind, response_format=Person)
    assert result.choices[0].message.parsed is None
    assert result.choices[0].message.tool_calls[0].function.name == "f"


@respx.mock
def test_repairs_re_ask_with_the_reply_and_errors_and_sum_usage(kind: str) -> None:
    route = respx.post(URL).mock(side_effect=[
        reply('{"name": "Ann"}', prompt=10, completion_tokens=5),
        reply('{"name": "Ann", "age": "x"}', prompt=40, completion_tokens=6),
        reply('{"name": "Ann", "age": 31}', prompt=70, completion_tokens=7, request_id="req_last"),
    ])
    result = parse(kind, response_format=Person, max_repairs=2)
    assert route.call_count == 3
    assert result.choices[0].message.parsed == Person(name="Ann", age=31)
    assert result.repairs == 2 and [a.usage.prompt_tokens for a in result.attempts] == [10, 40, 70]  # type: ignore[union-attr]
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.total_tokens) == (120, 18, 138)
    assert result.cost == pytest.approx((120 * 2.00 + 18 * 8.00) / 1e6, rel=1e-12)
    assert result.request_id == "req_last"
    second = body_of(route.calls[1].request)
    assert second["response_format"] == PERSON_FORMAT
    assert second["messages"] == [
        *MESSAGES,
        {"role": "assistant", "content": '{"name": "Ann"}'},
        {"role": "user", "content": "Your previous reply does not match the required JSON schema:\n"
                                    "- age: Field required\nReply again with only the corrected JSON."},
    ]
    third = body_of(route.calls[2].request)
    assert third["messages"][3:] == [
        {"role": "assistant", "content": '{"name": "Ann", "age": "x"}'},
        {"role": "user", "content": "Your previous reply does not match the required JSON schema:\n- age: Input "
                                    "should be a valid integer, unable to parse string as an integer\n"
                                    "Reply again with only the corrected JSON."},
    ]


@respx.mock
def test_repairs_exhausted_raise_with_summed_usage(kind: str) -> None:
    route = respx.post(URL).mock(side_effect=[reply("nope", prompt=10, completion_tokens=1),
                                              reply("still nope", prompt=20, completion_tokens=2)])
    with pytest.raises(StructuredOutputError) as info:
        parse(kind, response_format=Person, max_repairs=1)
    assert route.call_count == 2
    err = info.value
    assert err.attempts == 2 and err.raw_text == "still nope"
    assert err.completion.usage is not None and err.completion.usage.total_tokens == 33
    assert "after 2 attempt(s)" in str(err)


@respx.mock
@pytest.mark.parametrize(("kwargs", "field"), [
    ({"response_format": Person, "max_repairs": -1}, "max_repairs"),
    ({"response_format": Person, "max_repairs": True}, "max_repairs"),
    ({"response_format": Person, "max_repairs": 1, "n": 2}, "max_repairs"),
    ({"response_format": Person, "max_repairs": 1, "stream": True}, "max_repairs"),
    ({"response_format": None}, "response_format"),
    ({"response_format": Person, "temperature": 5}, "temperature"),
])
def test_bad_arguments_fail_before_any_request(kind: str, kwargs: dict[str, object], field: str) -> None:
    route = respx.post(URL).mock(return_value=reply("{}"))
    with pytest.raises(InvalidRequestError) as info:
        parse(kind, **kwargs)
    assert info.value.field == field
    assert route.call_count == 0


@respx.mock
def test_server_errors_keep_their_usual_type_and_retries(kind: str) -> None:
    route = respx.post(URL).mock(side_effect=[httpx.Response(500, json={"error": {"message": "boom"}}),
                                              reply('{"name": "Ann", "age": 31}')])
    result = parse(kind, response_format=Person)
    assert route.call_count == 2 and result.retries_taken == 1 and result.repairs == 0


@respx.mock
def test_plain_schema_dict_replies_are_checked_against_the_schema(kind: str) -> None:
    schema = {"title": "Person", "type": "object",
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
    route = respx.post(URL).mock(side_effect=[reply('{"name": "Ann"}'), reply('{"name": "Ann", "age": 31}'),
                                              reply('{"name": 5, "age": 31}')])
    result = parse(kind, response_format=schema, max_repairs=1)
    assert route.call_count == 2 and result.choices[0].message.parsed == {"name": "Ann", "age": 31}
    assert body_of(route.calls[1].request)["messages"][-1]["content"] == (
        "Your previous reply does not match the required JSON schema:\n- age: Field required\n"
        "Reply again with only the corrected JSON.")
    with pytest.raises(StructuredOutputError) as info:
        parse(kind, response_format=schema)
    assert info.value.validation_error is None and info.value.raw_text == '{"name": 5, "age": 31}'
    assert "- name: Input should be of type string" in str(info.value)

"""What real clients send, answered: JSON mode, ``n`` choices, ``/v1/completions`` and ``/v1/responses``,
driven by the official ``openai`` client (dev-only; skipped without openai)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holysheep.testing import FakeServer, Fault, auto_reply

from .conftest import RecordedSleep

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
WEATHER = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def make_client(server: FakeServer) -> Any:
    return openai.OpenAI(base_url=server.url, api_key=server.api_key, max_retries=0, timeout=5.0)


# ------------------------------------------------------------------ JSON mode
@pytest.mark.parametrize(("text", "expected"), [("plain words", {"echo": "plain words"}),
                                                ('{"a": [1]}', {"a": [1]})])
def test_json_object_echo_answers_a_json_object(text: str, expected: dict[str, Any]) -> None:
    with FakeServer() as server, make_client(server) as client:
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": text}], response_format={"type": "json_object"})
    assert json.loads(completion.choices[0].message.content) == expected


def test_json_object_structured_fits_the_prompt_schema() -> None:
    system = "Answer with JSON that matches this json_schema:\n\n" + json.dumps(PERSON) + "\n\nNo prose."
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Ann is 30"}]
    with FakeServer(reply=auto_reply()) as server, make_client(server) as client:
        fitted = client.chat.completions.create(model="m", messages=messages, response_format={"type": "json_object"})
        bare = client.chat.completions.create(model="m", messages=messages[1:],
                                              response_format={"type": "json_object"})
    assert json.loads(fitted.choices[0].message.content) == {"name": "example", "age": 0}
    assert json.loads(bare.choices[0].message.content) == {}


# ------------------------------------------------------------------ n choices
def test_n_choices_plain_and_streamed() -> None:
    messages = [{"role": "user", "content": "one two three"}]
    with FakeServer() as server, make_client(server) as client:
        plain = client.chat.completions.create(model="m", messages=messages, n=3)
        with client.chat.completions.stream(model="m", messages=messages, n=2,
                                            stream_options={"include_usage": True}) as stream:
            final = stream.get_final_completion()
    assert [(c.index, c.message.content, c.finish_reason) for c in plain.choices] == [
        (0, "one two three", "stop"), (1, "one two three", "stop"), (2, "one two three", "stop")]
    assert plain.usage is not None and plain.usage.completion_tokens == 9
    assert plain.usage.total_tokens == plain.usage.prompt_tokens + 9
    assert [c.message.content for c in final.choices] == ["one two three", "one two three"]
    assert final.usage is not None and final.usage.completion_tokens == 6


# ------------------------------------------------------------------ /v1/completions
def test_completions_plain_n_and_list_prompt() -> None:
    with FakeServer() as server, make_client(server) as client:
        one = client.completions.create(model="m", prompt="say this", n=2)
        many = client.completions.create(model="m", prompt=["first one", "second"])
    assert one.object == "text_completion"
    assert [(c.index, c.text, c.finish_reason) for c in one.choices] == [
        (0, "say this", "stop"), (1, "say this", "stop")]
    assert one.usage is not None and (one.usage.prompt_tokens, one.usage.completion_tokens) == (2, 4)
    assert [c.text for c in many.choices] == ["first one", "second"]
    assert server.requests[0].path == "/v1/completions"


def test_completions_stream_and_max_tokens() -> None:
    with FakeServer(reply="alpha beta gamma") as server, make_client(server) as client:
        chunks = list(client.completions.create(model="m", prompt="p", stream=True,
                                                stream_options={"include_usage": True}))
        short = client.completions.create(model="m", prompt="p", max_tokens=2)
    assert [c.choices[0].text for c in chunks if c.choices] == ["alpha ", "beta ", "gamma", ""]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3
    assert (short.choices[0].text, short.choices[0].finish_reason) == ("alpha beta", "length")


def test_completions_bad_prompt_is_400() -> None:
    with FakeServer() as server, make_client(server) as client, pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model="m", prompt=[1, 2])  # type: ignore[arg-type]
    assert info.value.status_code == 400 and info.value.param == "prompt"


# ------------------------------------------------------------------ /v1/responses
def test_responses_text_plain() -> None:
    with FakeServer() as server, make_client(server) as client:
        response = client.responses.create(model="gpt-4.1", input="hello there", instructions="Be brief.")
    assert response.object == "response" and response.status == "completed"
    assert response.output_text == "hello there"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (5, 2)  # ceil((9 + 11) chars / 4), 2 words
    assert server.requests[0].body["instructions"] == "Be brief."


def test_responses_stream_events_in_order() -> None:
    with FakeServer(reply="one two") as server, make_client(server) as client:
        events = list(client.responses.create(model="gpt-4.1", input="hi", stream=True))
    assert [e.type for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(10))
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["one ", "two"]
    assert events[-1].response.output_text == "one two"
    assert events[0].response.status == "in_progress"


def test_responses_function_call_then_tool_result() -> None:
    with FakeServer(reply=auto_reply()) as server, make_client(server) as client:
        first = client.responses.create(model="gpt-4.1", input="weather in Paris?", tools=WEATHER)
        call = first.output[0]
        assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "get_weather",
                                                                      {"city": "example"})
        second = client.responses.create(model="gpt-4.1", tools=WEATHER, input=[
            {"role": "user", "content": "weather in Paris?"}, call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    assert second.output_text == "Tool results: sunny"
    chat = server.requests[1].body
    assert chat["input"][2] == {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}


def test_responses_stream_helper_with_tools_and_parse() -> None:
    class Person(pydantic.BaseModel):
        name: str
        age: int

    with FakeServer(reply=auto_reply()) as server, make_client(server) as client:
        with client.responses.stream(model="gpt-4.1", input="weather?", tools=WEATHER) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
        parsed = client.responses.parse(model="gpt-4.1", input="Ann is 30", text_format=Person)
    assert kinds.count("response.function_call_arguments.delta") == 2  # '{"city":"example"}' in 16-char pieces
    assert [(o.type, o.arguments) for o in final.output] == [("function_call", '{"city":"example"}')]
    assert parsed.output_parsed == Person(name="example", age=0)


def test_responses_stream_is_paced_and_max_output_tokens_is_incomplete() -> None:
    sleep = RecordedSleep()
    with FakeServer(reply="a b c d", stream_chunk_delay=0.01, sleep=sleep) as server, make_client(server) as client:
        deltas = [e.delta for e in client.responses.create(model="m", input="x", stream=True)
                  if e.type == "response.output_text.delta"]
        short = client.responses.create(model="m", input="x", max_output_tokens=2)
    assert deltas == ["a ", "b ", "c ", "d"]
    assert sleep.delays == [0.01, 0.01, 0.01]  # before each delta after the first
    assert (short.status, short.incomplete_details.reason, short.output_text) == ("incomplete", "max_output_tokens",
                                                                                 "a b")


def test_responses_faults_apply_when_routed() -> None:
    with FakeServer(faults=[Fault.status(429)], fault_paths=["/responses"]) as server, make_client(server) as client:
        with pytest.raises(openai.RateLimitError):
            client.responses.create(model="m", input="x")
        assert client.responses.create(model="m", input="x").output_text == "x"
    assert [r.status for r in server.requests] == [429, 200]


def test_responses_without_input_is_400() -> None:
    with FakeServer() as server, make_client(server) as client, pytest.raises(openai.BadRequestError):
        client.responses.create(model="m", input=[])

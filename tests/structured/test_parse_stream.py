"""``parse(..., stream=True)``: chunks as from ``create``, then ``get_final_completion()`` parsed at the end."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import respx
from pydantic import BaseModel

from holysheep import AsyncClient, AsyncParsedStream, Client, ParsedStream, RefusalError, StructuredOutputError

from ..core.conftest import KEY
from ..streaming.conftest import chunk, sse, sse_response
from .conftest import MESSAGES, URL, body_of

PIECES = ['{"name": ', '"Ann", ', '"age": 3', "1}"]


class Person(BaseModel):
    name: str
    age: int


def body(pieces: list[str], *, refusal: list[str] | None = None) -> list[bytes]:
    """One network read per event, so ``stream.text`` can be checked between chunks."""
    events: list[dict[str, Any] | str] = [chunk(role="assistant", content="")]
    events += [chunk(p) for p in pieces]
    for piece in refusal or []:
        event = chunk()
        event["choices"][0]["delta"]["refusal"] = piece
        events.append(event)
    events += [chunk(finish="stop"), "[DONE]"]
    return [sse(e) for e in events]


def stream_parse(kind: str, **kwargs: Any) -> tuple[list[str], list[str], Any]:
    """Stream; return each chunk's content, the partial text seen after each chunk, and the final result."""
    contents: list[str] = []
    partial: list[str] = []
    if kind == "sync":
        with Client(api_key=KEY) as client:
            stream = client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person,
                                                   stream=True, **kwargs)
            assert isinstance(stream, ParsedStream)
            with stream:
                for c in stream:
                    contents.append(c.choices[0].delta.content or "" if c.choices else "")
                    partial.append(stream.text)
                return contents, partial, stream.get_final_completion()

    async def main() -> Any:
        async with AsyncClient(api_key=KEY) as client:
            stream = await client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person,
                                                         stream=True, **kwargs)
            assert isinstance(stream, AsyncParsedStream)
            async with stream:
                async for c in stream:
                    contents.append(c.choices[0].delta.content or "" if c.choices else "")
                    partial.append(stream.text)
                return contents, partial, await stream.get_final_completion()

    return asyncio.run(main())


@respx.mock
def test_stream_yields_chunks_then_the_parsed_completion(kind: str) -> None:
    route = respx.post(URL).mock(return_value=sse_response(*body(PIECES)))
    contents, partial, final = stream_parse(kind)
    assert contents == ["", *PIECES, ""]
    assert partial[2] == '{"name": "Ann", '  # partial JSON is visible, never validated mid-stream
    assert final.choices[0].message.parsed == Person(name="Ann", age=31)
    sent = body_of(route.calls[0].request)
    assert sent["stream"] is True and sent["response_format"]["json_schema"]["name"] == "Person"


@respx.mock
def test_invalid_json_is_reported_only_at_the_end(kind: str) -> None:
    respx.post(URL).mock(return_value=sse_response(*body(['{"name": ', '"Ann"}'])))
    with pytest.raises(StructuredOutputError) as info:
        stream_parse(kind)
    assert info.value.raw_text == '{"name": "Ann"}'
    assert [e["loc"] for e in info.value.validation_error.errors()] == [("age",)]  # type: ignore[union-attr]


@respx.mock
def test_streamed_refusal_is_returned_as_openai(kind: str) -> None:
    respx.post(URL).mock(return_value=sse_response(*body([], refusal=["I can't ", "do that."])))
    final = stream_parse(kind)[2]
    assert (final.choices[0].message.refusal, final.choices[0].message.parsed) == ("I can't do that.", None)


@respx.mock
def test_streamed_refusal_raises_refusal_error_when_asked(kind: str) -> None:
    respx.post(URL).mock(return_value=sse_response(*body([], refusal=["I can't ", "do that."])))
    with pytest.raises(RefusalError) as info:
        stream_parse(kind, on_refusal="raise")
    assert info.value.refusal == "I can't do that."


def test_get_final_completion_alone_reads_the_whole_stream() -> None:
    with respx.mock:
        respx.post(URL).mock(return_value=sse_response(*body(PIECES)))
        with Client(api_key=KEY) as client, client.chat.completions.parse(
                model="m", messages=MESSAGES, response_format=Person, stream=True) as stream:
            final = stream.get_final_completion()
            assert final is stream.get_final_completion()
    assert final.choices[0].message.parsed == Person(name="Ann", age=31)
    assert json.loads(final.choices[0].message.content or "") == {"name": "Ann", "age": 31}

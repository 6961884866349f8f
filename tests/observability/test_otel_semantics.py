"""GenAI convention details: a tool call is a ``tool_call`` part of the captured output message (as the official
openai-v2 instrumentation records it), and request attributes are only those the caller set."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import Client
from holysheep.testing import FakeServer, tool_call, tool_reply

from .otel_util import instrumented

pytest.importorskip("opentelemetry.sdk")

MESSAGES = [{"role": "user", "content": "weather in Paris?"}]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(reply=tool_reply(tool_call("get_weather", {"city": "Paris"}, id="call_1"))) as s:
        yield s


def _client(server: FakeServer) -> Client:
    return Client(api_key=server.api_key, base_url=server.url)


def _output(span: Any) -> Any:
    return json.loads(span.attributes["gen_ai.output.messages"])


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_tool_call_is_a_tool_call_part(server: FakeServer, stream: bool) -> None:
    with instrumented(capture_message_content=True) as t, _client(server) as client:
        if stream:
            with client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as chunks:
                for _ in chunks:
                    pass
        else:
            client.chat.completions.create(model="m", messages=MESSAGES)
    (span,) = t.spans()
    assert _output(span) == [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]}]


def test_text_and_unparseable_arguments(server: FakeServer) -> None:
    server.reply = tool_reply(tool_call("f", "{not json", id="c9"), content="Let me look.")
    with instrumented(capture_message_content=True) as t, _client(server) as client:
        client.chat.completions.create(model="m", messages=MESSAGES)
    (span,) = t.spans()
    assert _output(span)[0]["parts"] == [{"type": "text", "content": "Let me look."},
                                         {"type": "tool_call", "id": "c9", "name": "f", "arguments": "{not json"}]


@pytest.mark.parametrize(("encoding_format", "reported"), [(None, None), ("float", ("float",)),
                                                           ("base64", ("base64",))])
def test_encoding_formats_only_when_the_caller_set_one(server: FakeServer, encoding_format: str | None,
                                                       reported: tuple[str, ...] | None) -> None:
    kw = {} if encoding_format is None else {"encoding_format": encoding_format}
    with instrumented() as t, _client(server) as client:
        client.embeddings.create(model="text-embedding-3-small", input="hello", **kw)  # type: ignore[arg-type]
    (span,) = t.spans()
    assert server.requests[0].body["encoding_format"] == (encoding_format or "base64")  # the SDK asks for base64
    assert span.attributes.get("gen_ai.request.encoding_formats") == reported

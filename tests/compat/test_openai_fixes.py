"""Regressions from running openai-python code on holysheep: ``from holysheep.types import *``, and the stream
helper's final completion (``system_fingerprint`` kept; ``content`` is ``""`` after a tool-call stream), side by
side with openai against the same FakeServer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

import holysheep
from holysheep.testing import FakeServer, tool_call, tool_reply

MESSAGES: list[Any] = [{"role": "user", "content": "hi there"}]
TOOLS: list[Any] = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_star_import_of_types() -> None:
    namespace: dict[str, Any] = {}
    exec("from holysheep.types import *", namespace)
    import holysheep.types as types

    assert {"CreateEmbeddingResponse", "Embedding", "EmbeddingUsage", "ChatCompletionStreamEvent"} <= set(namespace)
    assert all(namespace[name] is getattr(types, name) for name in types.__all__)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def _final(package: Any, server: FakeServer, **kwargs: Any) -> dict[str, Any]:
    cls = openai.OpenAI if package is openai else holysheep.Client
    with cls(api_key=server.api_key, base_url=server.url) as client, \
            client.chat.completions.stream(model="deepseek-v3.2", messages=MESSAGES, **kwargs) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
    return {"system_fingerprint": final.system_fingerprint, "content": message.content, "calls": calls,
            "finish_reason": final.choices[0].finish_reason, "parsed": message.parsed, "refusal": message.refusal}


def test_stream_helper_final_keeps_system_fingerprint(server: FakeServer) -> None:
    server.reply = "echo"
    ours = _final(holysheep, server)
    assert ours == _final(openai, server)
    assert ours["system_fingerprint"] == "fp_holysheep_fake" and ours["content"] == "hi there"


def test_content_is_empty_text_after_a_tool_call_stream(server: FakeServer) -> None:
    server.reply = tool_reply(tool_call("get_weather", {"city": "Paris"}))
    try:
        ours = _final(holysheep, server, tools=TOOLS)
        assert ours == _final(openai, server, tools=TOOLS)
    finally:
        server.reply = "echo"
    assert ours["content"] == "" and ours["calls"] == [("get_weather", '{"city":"Paris"}')]

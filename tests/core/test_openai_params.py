"""Drop-in for openai-python: every keyword of the installed openai's ``chat.completions.create`` is accepted,
typed in ``ChatParams``, and sent as given."""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

import httpx
import pytest

from holysheep import AsyncClient, ChatParams, Client, InvalidRequestError

from .conftest import COMPLETION, KEY, MESSAGES

openai_completions = pytest.importorskip("openai.resources.chat.completions")

# Not body fields: handled by the client itself (or the call's transport options).
_NOT_BODY = {"self", "messages", "model", "stream", "extra_headers", "extra_query", "extra_body", "timeout"}

# A valid value for each keyword whose shape holysheep checks; any other keyword gets a plain string.
SAMPLES: dict[str, Any] = {
    "audio": {"voice": "alloy", "format": "wav"},
    "frequency_penalty": 0.5,
    "function_call": "auto",
    "functions": [{"name": "f", "parameters": {"type": "object", "properties": {}}}],
    "logit_bias": {"50256": -100},
    "logprobs": True,
    "max_completion_tokens": 16,
    "max_tokens": 16,
    "metadata": {"run": "nightly"},
    "modalities": ["text"],
    "moderation": {"input": True},
    "n": 1,
    "parallel_tool_calls": False,
    "prediction": {"type": "content", "content": "draft"},
    "presence_penalty": 0.1,
    "prompt_cache_key": "tenant-42",
    "prompt_cache_options": {"mode": "auto"},
    "prompt_cache_retention": "24h",
    "reasoning_effort": "low",
    "response_format": {"type": "json_object"},
    "safety_identifier": "user-hash-1",
    "seed": 7,
    "service_tier": "auto",
    "stop": ["\n\n"],
    "store": False,
    "stream_options": {"include_usage": True},
    "temperature": 0.2,
    "tool_choice": "auto",
    "tools": [{"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}],
    "top_logprobs": 2,
    "top_p": 0.9,
    "user": "u-1",
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
}


def openai_keywords() -> list[str]:
    params = inspect.signature(openai_completions.Completions.create).parameters
    return [name for name in params if name not in _NOT_BODY]


def _client(seen: list[dict[str, Any]]) -> Client:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=COMPLETION)

    return Client(api_key=KEY, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_the_installed_openai_has_keywords() -> None:
    names = openai_keywords()
    assert {"temperature", "prompt_cache_key", "tools"} <= set(names)
    assert len(names) >= 30


@pytest.mark.parametrize("name", openai_keywords())
def test_every_openai_keyword_is_accepted_typed_and_sent_as_given(name: str) -> None:
    """Fails when a new openai release adds a keyword that holysheep refuses (or does not type)."""
    value = SAMPLES.get(name, "x")
    seen: list[dict[str, Any]] = []
    with _client(seen) as client:
        client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, **{name: value})
    assert seen[0][name] == value
    assert name in typing.get_type_hints(ChatParams), f"{name} is accepted but not typed in ChatParams"


def test_all_openai_keywords_at_once_sync_and_async() -> None:
    body = {name: SAMPLES.get(name, "x") for name in openai_keywords()}
    seen: list[dict[str, Any]] = []
    with _client(seen) as client:
        client.chat.completions.create(model="m", messages=MESSAGES, **body)

    async def main() -> None:
        async def handler(request: httpx.Request) -> httpx.Response:
            seen.append(json.loads(request.content))
            return httpx.Response(200, json=COMPLETION)

        async with AsyncClient(api_key=KEY, http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler))
                               ) as client:
            await client.chat.completions.create(model="m", messages=MESSAGES, **body)

    import asyncio

    asyncio.run(main())
    for sent in seen:
        assert {k: sent[k] for k in body} == body


BAD_SHAPES: list[tuple[str, Any]] = [
    ("functions", {"name": "f"}),
    ("functions", [{"parameters": {}}]),
    ("function_call", 3),
    ("audio", "alloy"),
    ("modalities", "text"),
    ("modalities", ["text", 3]),
    ("prediction", "draft"),
    ("prompt_cache_key", 12),
    ("safety_identifier", ["x"]),
    ("verbosity", 1),
    ("web_search_options", "on"),
    ("moderation", "yes"),
    ("prompt_cache_retention", 24),
]


@pytest.mark.parametrize(("name", "value"), BAD_SHAPES)
def test_known_shapes_are_checked_before_io(name: str, value: Any) -> None:
    seen: list[dict[str, Any]] = []
    with _client(seen) as client, pytest.raises(InvalidRequestError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES, **{name: value})
    assert info.value.field is not None and info.value.field.startswith(name)
    assert seen == []


def test_typos_are_still_caught() -> None:
    seen: list[dict[str, Any]] = []
    with _client(seen) as client:
        with pytest.raises(InvalidRequestError, match="prompt_cache_key"):
            client.chat.completions.create(model="m", messages=MESSAGES, prompt_cache_kye="x")  # type: ignore[call-arg]
        with pytest.raises(InvalidRequestError, match="temperature"):
            client.chat.completions.create(model="m", messages=MESSAGES, temprature=0.1)  # type: ignore[call-arg]
    assert seen == []

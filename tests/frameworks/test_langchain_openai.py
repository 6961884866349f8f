"""langchain-openai on holysheep: invoke, ainvoke, stream, tools and ``with_structured_output``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from .conftest import Stack, need

langchain_openai = need("langchain_openai")
pytestmark = pytest.mark.frameworks


class Person(BaseModel):
    name: str
    age: int


def _chat(sync: Any, async_: Any = None, **kwargs: Any) -> Any:
    """``ChatOpenAI`` on openai clients from ``as_openai()`` (langchain takes them as ``root_client`` and
    ``client``, the async ones likewise)."""
    extra: dict[str, Any] = {}
    if async_ is not None:
        extra = {"root_async_client": async_, "async_client": async_.chat.completions}
    return langchain_openai.ChatOpenAI(model="gpt-4.1", root_client=sync, client=sync.chat.completions,
                                       api_key="unused", **extra, **kwargs)


def test_invoke_and_stream(stack: Stack) -> None:
    llm = _chat(stack.client.as_openai())
    assert llm.invoke("hello from langchain").content == "hello from langchain"
    assert "".join(str(chunk.content) for chunk in llm.stream("hello streamed")) == "hello streamed"
    assert stack.paths() == ["/v1/chat/completions"] * 2
    assert stack.seen.calls == [("chat/completions", "success")] * 2


async def test_ainvoke(stack: Stack) -> None:
    async with stack.async_client() as client:
        llm = _chat(stack.client.as_openai(), client.as_openai())
        reply = await llm.ainvoke("hello async")
    assert reply.content == "hello async"
    assert stack.paths() == ["/v1/chat/completions"]


def test_tools(stack: Stack) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    reply = _chat(stack.client.as_openai()).bind_tools([get_weather]).invoke("weather in Paris?")
    [call] = reply.tool_calls
    assert call["name"] == "get_weather" and isinstance(call["args"]["city"], str)
    assert stack.server.requests[0].body["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_with_structured_output(stack: Stack, method: str) -> None:
    llm = _chat(stack.client.as_openai()).with_structured_output(Person, method=method)
    prompt = "A person, please."
    if method == "json_mode":  # the schema goes into the prompt, as LangChain's docs show
        prompt += f" Answer in JSON with this schema: {Person.model_json_schema()}".replace("'", '"')
    person = llm.invoke(prompt)
    assert isinstance(person, Person)
    assert stack.paths() == ["/v1/chat/completions"]
    assert stack.seen.calls == [("chat/completions", "success")]

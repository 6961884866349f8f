"""pydantic-ai on holysheep: its chat and Responses models, text and structured output."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from .conftest import Stack, need

pydantic_ai = need("pydantic_ai")
openai_models = need("pydantic_ai.models.openai")
providers = need("pydantic_ai.providers.openai")
pytestmark = pytest.mark.frameworks


class City(BaseModel):
    name: str
    population: int


def _model(kind: str, client: object) -> object:
    provider = providers.OpenAIProvider(openai_client=client)
    if kind == "chat":
        return openai_models.OpenAIChatModel("gpt-4.1", provider=provider)
    return openai_models.OpenAIResponsesModel("gpt-4.1", provider=provider)


@pytest.mark.parametrize(("kind", "path"), [("chat", "chat/completions"), ("responses", "responses")])
async def test_text_and_structured_output(stack: Stack, kind: str, path: str) -> None:
    async with stack.async_client() as client:
        model = _model(kind, client.as_openai())
        text = await pydantic_ai.Agent(model).run("hello from pydantic-ai")
        city = await pydantic_ai.Agent(model, output_type=City).run("A city, please.")
    assert text.output == "hello from pydantic-ai"
    assert isinstance(city.output, City)
    assert stack.paths() == [f"/v1/{path}"] * 2
    assert stack.seen.calls == [(path, "success")] * 2
    assert stack.server.requests[1].body["tools"][0]["type"] == "function"  # output as a tool call


async def test_streamed_text(stack: Stack) -> None:
    async with stack.async_client() as client:
        agent = pydantic_ai.Agent(_model("chat", client.as_openai()))
        async with agent.run_stream("hello streamed") as run:
            text = await run.get_output()
    assert text == "hello streamed"
    assert stack.paths() == ["/v1/chat/completions"]
    assert stack.server.requests[0].body["stream"] is True

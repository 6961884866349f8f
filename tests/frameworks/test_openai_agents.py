"""openai-agents on holysheep: its chat-completions model and its default (Responses) model."""

from __future__ import annotations

import pytest

from .conftest import Stack, need

agents = need("agents")
pytestmark = pytest.mark.frameworks


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    agents.set_tracing_disabled(True)


async def test_chat_completions_model(stack: Stack) -> None:
    async with stack.async_client() as client:
        model = agents.OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=client.as_openai())
        agent = agents.Agent(name="echo", instructions="Repeat the user.", model=model)
        result = await agents.Runner.run(agent, "hello from agents")
    assert result.final_output == "hello from agents"
    assert stack.paths() == ["/v1/chat/completions"]
    assert stack.seen.calls == [("chat/completions", "success")]


async def test_default_responses_model_with_a_tool(stack: Stack) -> None:
    calls: list[str] = []

    @agents.function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    async with stack.async_client() as client:
        agents.set_default_openai_client(client.as_openai(), use_for_tracing=False)
        try:
            agent = agents.Agent(name="weather", instructions="Use the tool.", model="gpt-4.1", tools=[weather])
            result = await agents.Runner.run(agent, "weather in Paris?")
        finally:
            agents.set_default_openai_client(None, use_for_tracing=False)  # type: ignore[arg-type]
    assert len(calls) == 1
    assert result.final_output == f"Tool results: sunny in {calls[0]}"
    assert stack.paths() == ["/v1/responses", "/v1/responses"]  # the tool call, then the answer
    assert stack.seen.calls == [("responses", "success")] * 2


async def test_streamed_run(stack: Stack) -> None:
    async with stack.async_client() as client:
        model = agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client.as_openai())
        agent = agents.Agent(name="echo", instructions="Repeat the user.", model=model)
        result = agents.Runner.run_streamed(agent, "hello streamed")
        deltas = [e.data.delta async for e in result.stream_events()
                  if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"]
    assert "".join(deltas) == "hello streamed"
    assert result.final_output == "hello streamed"
    assert stack.paths() == ["/v1/responses"]

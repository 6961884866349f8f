"""The wire format sums usage (#44): ``WireFormat.sum_usage`` adds up several replies' usage in the format's own type
(chat's `CompletionUsage`, the Responses API's `ResponseUsage`), every count and every breakdown count; what
``run_tools`` (on both APIs) and a batch agent's ``tool_run.usage`` report."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client
from holysheep._core.tool_results import ToolRunResult
from holysheep._core.wire import CHAT, EMBEDDINGS, responses_wire
from holysheep._core.wire.responses_tools import ResponseToolRunResult
from holysheep.testing import FakeServer, RecordedRequest, Response
from holysheep.types._base import sum_counts
from holysheep.types.chat import ChatCompletion, CompletionTokensDetails, CompletionUsage, PromptTokensDetails
from holysheep.types.embeddings import CreateEmbeddingResponse
from holysheep.types.responses import InputTokensDetails, OutputTokensDetails, ResponseUsage
from holysheep.types.responses import Response as ApiResponse

CHAT_USAGES: list[dict[str, Any] | None] = [
    {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
     "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 1},
     "completion_tokens_details": {"reasoning_tokens": 3}},
    {"prompt_tokens": 20, "completion_tokens": 7,  # no total_tokens: counted as 27
     "prompt_tokens_details": {"cached_tokens": 8},
     "completion_tokens_details": {"reasoning_tokens": 2, "accepted_prediction_tokens": 1}},
    None,  # a reply without usage adds nothing
    {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},  # no breakdown
]
CHAT_SUM = CompletionUsage.model_validate({
    "prompt_tokens": 31, "completion_tokens": 13, "total_tokens": 44,
    "prompt_tokens_details": {"cached_tokens": 12, "audio_tokens": 1},
    "completion_tokens_details": {"reasoning_tokens": 5, "accepted_prediction_tokens": 1}})

RESPONSE_USAGES: list[dict[str, Any] | None] = [
    {"input_tokens": 100, "output_tokens": 40, "total_tokens": 140, "input_tokens_details": {"cached_tokens": 64},
     "output_tokens_details": {"reasoning_tokens": 30}},
    {"input_tokens": 150, "output_tokens": 9, "total_tokens": 0,  # 0 (or null, as LiteLLM sends): counted as 159
     "input_tokens_details": {"cached_tokens": 128}, "output_tokens_details": {"reasoning_tokens": None}},
    None,
]
RESPONSE_SUM = ResponseUsage(input_tokens=250, output_tokens=49, total_tokens=299,
                             input_tokens_details=InputTokensDetails(cached_tokens=192),
                             output_tokens_details=OutputTokensDetails(reasoning_tokens=30))


def completion(usage: dict[str, Any] | None, **message: Any) -> ChatCompletion:
    return ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m", "usage": usage, "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x", **message}}]})


def response(usage: dict[str, Any] | None) -> ApiResponse:
    return ApiResponse.model_validate({"id": "r", "object": "response", "model": "m", "status": "completed",
                                       "output": [], "usage": usage})


def test_chat_sums_every_count_and_breakdown_count() -> None:
    replies = [completion(u) for u in CHAT_USAGES]
    summed = CHAT.sum_usage(replies)
    assert summed == CHAT_SUM
    assert summed is not None and summed.model_dump() == {
        "completion_tokens": 13, "prompt_tokens": 31, "total_tokens": 44,
        "completion_tokens_details": {"accepted_prediction_tokens": 1, "audio_tokens": None, "reasoning_tokens": 5,
                                      "rejected_prediction_tokens": None, "text_tokens": None},
        "prompt_tokens_details": {"audio_tokens": 1, "cache_write_tokens": None, "cached_tokens": 12,
                                  "image_tokens": None, "text_tokens": None}}
    assert ToolRunResult(replies[-1], [], [], replies).usage == CHAT_SUM  # what chat's run_tools reports
    assert CHAT.sum_usage([completion(None)]) is None and CHAT.sum_usage([]) is None


def test_responses_sums_every_count_and_breakdown_count() -> None:
    replies = [response(u) for u in RESPONSE_USAGES]
    wire = responses_wire()
    summed = wire.sum_usage(replies)
    assert summed == RESPONSE_SUM and summed is not None
    assert summed.model_dump() == {"input_tokens": 250, "output_tokens": 49, "total_tokens": 299,
                                   "input_tokens_details": {"cached_tokens": 192},
                                   "output_tokens_details": {"reasoning_tokens": 30}}
    assert ResponseToolRunResult(replies[0], [], [], replies).usage == RESPONSE_SUM
    assert wire.sum_usage([response(None)]) is None


def test_any_format_sums_its_own_usage_type() -> None:
    replies = [CreateEmbeddingResponse.model_validate({"object": "list", "data": [], "model": "m",
                                                       "usage": {"prompt_tokens": n, "total_tokens": n}})
               for n in (3, 4)]
    summed = EMBEDDINGS.sum_usage(replies)
    assert type(summed) is type(replies[0].usage) and summed == type(summed)(prompt_tokens=7, total_tokens=7)
    assert sum_counts(CompletionUsage, []) == CompletionUsage()


def _chat_turns(request: RecordedRequest) -> Response:
    """A tool call first, then the answer once the tool's result is in; each reply with its own usage."""
    done = any(m.get("role") == "tool" for m in request.body["messages"])
    message: dict[str, Any] = {"role": "assistant", "content": "done"} if done else {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": '{"x":1}'}}]}
    return Response(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                          "usage": CHAT_USAGES[1 if done else 0],
                          "choices": [{"index": 0, "finish_reason": "stop", "message": message}]})


def _response_turns(request: RecordedRequest) -> Response:
    done = any(i.get("type") == "function_call_output" for i in request.body["input"])
    item: dict[str, Any] = {"type": "message", "id": "m1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "done", "annotations": []}]} if done else {
        "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": '{"x":1}',
        "status": "completed"}
    return Response(200, {"id": "r", "object": "response", "created_at": 0, "model": "m", "status": "completed",
                          "output": [item], "usage": RESPONSE_USAGES[1 if done else 0]})


def echo(x: int) -> int:
    """Echo a number."""
    return x


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_run_tools_and_batch_agents_report_the_summed_usage(kind: str) -> None:
    chat_sum = CHAT.sum_usage([completion(u) for u in CHAT_USAGES[:2]])
    response_sum = RESPONSE_SUM

    async def both(client: Any) -> list[Any]:
        return [await client.chat.completions.run_tools(model="m", messages=[{"role": "user", "content": "q"}],
                                                        tools=[echo]),
                await client.responses.run_tools(model="m", input="q", tools=[echo]),
                await client.chat.completions.batch(["q"], model="m", tools=[echo]),
                await client.responses.batch(["q"], model="m", tools=[echo])]

    with FakeServer() as server:
        server.on("POST", "/chat/completions", _chat_turns)
        server.on("POST", "/responses", _response_turns)
        if kind == "sync":
            with Client(api_key=server.api_key, base_url=server.url) as client:
                runs = [client.chat.completions.run_tools(model="m", messages=[{"role": "user", "content": "q"}],
                                                          tools=[echo]),
                        client.responses.run_tools(model="m", input="q", tools=[echo]),
                        client.chat.completions.batch(["q"], model="m", tools=[echo]),
                        client.responses.batch(["q"], model="m", tools=[echo])]
        else:
            async def go() -> list[Any]:
                async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                    return await both(client)

            runs = asyncio.run(go())
    chat_run, response_run, chat_batch, response_batch = runs
    assert chat_sum is not None and chat_sum.prompt_tokens_details is not None
    assert chat_sum.completion_tokens_details is not None
    assert (chat_sum.prompt_tokens, chat_sum.completion_tokens, chat_sum.total_tokens) == (30, 12, 42)
    assert chat_sum.prompt_tokens_details == PromptTokensDetails(cached_tokens=12, audio_tokens=1)
    assert chat_sum.completion_tokens_details == CompletionTokensDetails(reasoning_tokens=5,
                                                                         accepted_prediction_tokens=1)
    assert chat_run.turns == 2 and chat_run.usage == chat_sum
    assert response_run.turns == 2 and response_run.usage == response_sum
    assert chat_batch[0].tool_run.usage == chat_sum and response_batch[0].tool_run.usage == response_sum
    assert (response_batch.stats.prompt_tokens, response_batch.stats.completion_tokens) == (250, 49)


def test_the_usage_types_add_with_plus() -> None:
    one, two = (CompletionUsage.model_validate(u) for u in CHAT_USAGES[:2])
    assert one + two == CompletionUsage.model_validate({
        "prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42,
        "prompt_tokens_details": {"cached_tokens": 12, "audio_tokens": 1},
        "completion_tokens_details": {"reasoning_tokens": 5, "accepted_prediction_tokens": 1}})
    first, second = (ResponseUsage.model_validate(u) for u in RESPONSE_USAGES[:2])
    assert first + second == RESPONSE_SUM
    with pytest.raises(TypeError):
        one + first  # two formats' usages do not add

"""holysheep's objects print as openai-python's do (#44): the same ``str()`` and ``repr()`` for objects parsed from
the same JSON (openai's ``str`` is its ``repr``: ``CompletionUsage(completion_tokens=3, ...)``), and their fields in
openai's order, holysheep's own (``reasoning_content``) after them and shown only when the server sent them."""

from __future__ import annotations

from typing import Any

import openai.types as ot
import openai.types.chat as oc
import pytest
from openai.pagination import SyncPage
from openai.types.chat import chat_completion_chunk as occ
from openai.types.chat.chat_completion_message_function_tool_call import ChatCompletionMessageFunctionToolCall

import holysheep.types as ht
from holysheep.types.chat import ChoiceDeltaFunction, Function

USAGE = {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21,
         "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                       "rejected_prediction_tokens": 0}}
COMPLETION = {"id": "chatcmpl-abc", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-2024-08-06",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there!", "refusal": None,
                                                   "annotations": []},
                           "logprobs": None, "finish_reason": "stop"}],
              "usage": USAGE, "service_tier": "default", "system_fingerprint": "fp_44709d6fcb"}
TOOL_CALLS = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}}]}
REASONING = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "stop", "message": {
    "role": "assistant", "content": "4", "reasoning_content": "2+2", "extra_field": 1}}]}
TOP = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105]}
LOGPROBS = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
    "content": "Hi"}, "logprobs": {"content": [{**TOP, "top_logprobs": [TOP]}], "refusal": None}}]}
CHUNK = {"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
         "system_fingerprint": "fp", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"},
                                                   "logprobs": None, "finish_reason": None}]}
TOOL_CHUNK = {**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [
    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\""}}]},
    "finish_reason": None}]}
USAGE_CHUNK = {**CHUNK, "choices": [], "usage": USAGE}
EMBEDDINGS = {"object": "list", "model": "text-embedding-3-small", "usage": {"prompt_tokens": 2, "total_tokens": 2},
              "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}]}
MODEL = {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"}

CASES: list[tuple[str, Any, Any, dict[str, Any]]] = [
    ("completion", oc.ChatCompletion, ht.ChatCompletion, COMPLETION),
    ("tool_calls", oc.ChatCompletion, ht.ChatCompletion, TOOL_CALLS),
    ("reasoning_content", oc.ChatCompletion, ht.ChatCompletion, REASONING),
    ("logprobs", oc.ChatCompletion, ht.ChatCompletion, LOGPROBS),
    ("usage", ot.CompletionUsage, ht.CompletionUsage, USAGE),
    ("message", oc.ChatCompletionMessage, ht.ChatCompletionMessage, TOOL_CALLS["choices"][0]["message"]),
    ("chunk", oc.ChatCompletionChunk, ht.ChatCompletionChunk, CHUNK),
    ("tool_chunk", oc.ChatCompletionChunk, ht.ChatCompletionChunk, TOOL_CHUNK),
    ("usage_chunk", oc.ChatCompletionChunk, ht.ChatCompletionChunk, USAGE_CHUNK),
    ("embeddings", ot.CreateEmbeddingResponse, ht.CreateEmbeddingResponse, EMBEDDINGS),
    ("model", ot.Model, ht.Model, MODEL),
    ("models_page", SyncPage[ot.Model], ht.ModelList, {"object": "list", "data": [MODEL]}),
]


@pytest.mark.parametrize(("theirs", "ours", "body"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_str_and_repr_are_openais(theirs: Any, ours: Any, body: dict[str, Any]) -> None:
    a, b = theirs.model_validate(body), ours.model_validate(body)
    assert str(b) == str(a)
    assert repr(b) == repr(a)


def test_print_usage_as_the_issue_shows_it() -> None:
    usage = ht.CompletionUsage.model_validate({"prompt_tokens": 9, "completion_tokens": 0, "total_tokens": 9})
    assert str(usage) == ("CompletionUsage(completion_tokens=0, prompt_tokens=9, total_tokens=9, "
                          "completion_tokens_details=None, prompt_tokens_details=None)")


PAIRS: list[tuple[Any, Any]] = [
    (oc.ChatCompletion, ht.ChatCompletion), (oc.chat_completion.Choice, ht.Choice),
    (oc.ChatCompletionMessage, ht.ChatCompletionMessage), (ChatCompletionMessageFunctionToolCall, ht.ToolCall),
    (oc.chat_completion_message_function_tool_call.Function, Function), (ot.CompletionUsage, ht.CompletionUsage),
    (ot.completion_usage.PromptTokensDetails, ht.PromptTokensDetails),
    (ot.completion_usage.CompletionTokensDetails, ht.CompletionTokensDetails),
    (oc.ChatCompletionChunk, ht.ChatCompletionChunk), (occ.Choice, ht.ChunkChoice), (occ.ChoiceDelta, ht.ChoiceDelta),
    (occ.ChoiceDeltaToolCall, ht.ChoiceDeltaToolCall), (occ.ChoiceDeltaToolCallFunction, ChoiceDeltaFunction),
    (ot.Embedding, ht.Embedding), (ot.CreateEmbeddingResponse, ht.CreateEmbeddingResponse),
    (ot.create_embedding_response.Usage, ht.EmbeddingUsage), (ot.Model, ht.Model),
    (oc.ChatCompletionTokenLogprob, ht.ChatCompletionTokenLogprob),
    (oc.chat_completion.ChoiceLogprobs, ht.ChoiceLogprobs),
    (oc.ParsedChatCompletion, ht.ParsedChatCompletion), (oc.ParsedChoice, ht.ParsedChoice),
    (oc.ParsedChatCompletionMessage, ht.ParsedChatCompletionMessage),
]


@pytest.mark.parametrize(("theirs", "ours"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_fields_are_in_openais_order(theirs: Any, ours: Any) -> None:
    own = [name for name in ours.model_fields if name not in theirs.model_fields]
    assert [name for name in ours.model_fields if name in theirs.model_fields] == list(theirs.model_fields)
    assert set(own) <= {"reasoning_content"}


def test_the_tool_call_id_is_a_str() -> None:
    assert ht.ToolCall.model_fields["id"].annotation is str
    call = ht.ToolCall.model_validate({"id": None, "function": {"name": "f", "arguments": "{}"}})
    assert call.id == ""  # a server that sends none: still a str, to send back as tool_call_id

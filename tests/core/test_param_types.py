"""The ``**params`` TypedDicts of the chat methods: each method's keyword names are pinned, and each types
``tools`` as it is accepted at run time (``create()`` and ``stream()`` without a model format: dicts only;
``parse``, ``run_tools``, ``batch``: functions and pydantic models too). ``mypy --strict examples`` checks
the typed calls themselves (examples/tool_batch.py passes a function in ``batch(tools=...)``)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel

from holysheep import ChatParams, Client, InvalidRequestError
from holysheep._clients.resources.tools import AsyncRunTools, SyncRunTools
from holysheep._core.batch_params import BATCH_OPTION_NAMES, HOOK_NAMES, BatchParams
from holysheep._core.request import (
    CHAT_PARAM_NAMES,
    ChatParamsBase,
    ChatParamsNoFormat,
    ParseParams,
    RunToolsParams,
)

# The keyword names create() accepts (besides model, messages, stream). Changing this set is an API change.
CREATE_NAMES = frozenset({
    "audio", "extra_body", "extra_headers", "extra_query", "frequency_penalty", "function_call", "functions",
    "logit_bias", "logprobs", "max_completion_tokens", "max_retries", "max_tokens", "metadata", "modalities",
    "moderation", "n", "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier",
    "seed", "service_tier", "stop", "store", "stream_idle_timeout", "stream_options", "temperature", "timeout",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
})
BATCH_EXTRAS = frozenset({"model", "max_repairs", "max_turns", "tool_timeout"}) | BATCH_OPTION_NAMES | HOOK_NAMES

TOOL_ENTRY = typing.Union[Mapping[str, Any], Callable[..., Any], type[BaseModel]]
RESPONSE_FORMAT = typing.Union[Mapping[str, Any], type[Any]]  # as they run: any mapping, any type
BATCH_RESPONSE_FORMAT = typing.Union[Mapping[str, Any], type[Any]]  # as parse(): any mapping, any type


def test_the_accepted_keyword_names_are_pinned() -> None:
    assert CHAT_PARAM_NAMES == CREATE_NAMES
    assert frozenset(ChatParams.__annotations__) == CREATE_NAMES
    assert frozenset(ChatParamsBase.__annotations__) == CREATE_NAMES - {"tools", "response_format"}
    assert frozenset(ChatParamsNoFormat.__annotations__) == CREATE_NAMES - {"response_format"}
    assert frozenset(ParseParams.__annotations__) == CREATE_NAMES - {"response_format"}  # its own argument
    assert frozenset(RunToolsParams.__annotations__) == CREATE_NAMES - {"tools"}  # its own argument
    assert frozenset(BatchParams.__annotations__) == CREATE_NAMES | BATCH_EXTRAS
    for params in (ChatParams, ChatParamsBase, ChatParamsNoFormat, ParseParams, RunToolsParams, BatchParams):
        assert params.__required_keys__ == frozenset(), params.__name__  # every keyword is optional


def test_each_method_types_tools_as_it_accepts_them() -> None:
    hints = {p.__name__: typing.get_type_hints(p) for p in (ChatParams, ChatParamsNoFormat, ParseParams,
                                                           RunToolsParams, BatchParams)}
    # create() sends tools as given: mappings only (openai's ChatCompletionToolParam TypedDicts among them)
    assert hints["ChatParams"]["tools"] == Sequence[Mapping[str, Any]]
    assert hints["ChatParamsNoFormat"]["tools"] == Sequence[Mapping[str, Any]]
    assert hints["ParseParams"]["tools"] == Sequence[TOOL_ENTRY]
    assert hints["BatchParams"]["tools"] == Sequence[TOOL_ENTRY]
    assert hints["ChatParams"]["response_format"] == RESPONSE_FORMAT
    assert hints["RunToolsParams"]["response_format"] == RESPONSE_FORMAT
    assert hints["BatchParams"]["response_format"] == BATCH_RESPONSE_FORMAT
    for cls in (SyncRunTools, AsyncRunTools):  # its own tools argument, the rest as RunToolsParams
        parameters = inspect.signature(cls.run_tools).parameters
        assert parameters["tools"].annotation == "Sequence[ToolInput]"
        assert parameters["params"].annotation == "Unpack[RunToolsParams]"


def lookup(key: str) -> str:
    """Look a key up."""
    return key


@respx.mock
def test_where_tools_are_dicts_only_a_function_is_refused_before_io() -> None:
    """What the dict-only types say: create() and stream() without a model format refuse a function."""
    route = respx.post("https://api.holysheep.ai/v1/chat/completions").mock(return_value=httpx.Response(500))
    messages = [{"role": "user", "content": "hi"}]
    with Client(api_key="hs_" + "x" * 32) as client:
        bad: Any = [lookup]
        with pytest.raises(InvalidRequestError, match=r"tools\[0\]: must be a dict, got function"):
            client.chat.completions.create(model="m", messages=messages, tools=bad)
        with pytest.raises(InvalidRequestError, match=r"tools\[0\]: must be a dict, got function"):
            client.chat.completions.stream(model="m", messages=messages, tools=bad)
    assert route.call_count == 0

"""Every field of openai-python's response models exists on holysheep's counterpart, with openai's default.

The walk starts at the top-level response models and follows each field's model type on both sides at once,
so nested parts (message, delta, usage details, logprobs, ...) are paired and checked too."""

from __future__ import annotations

import typing
from typing import Any

import openai.types as ot
import openai.types.chat as oc
import pytest
from openai.pagination import SyncPage
from pydantic import BaseModel

import holysheep.types as ht
from holysheep.types.account import ModelList

# Where holysheep keeps openai's value as JSON instead of a model (field name on the openai model: reason).
_AS_JSON = {"moderation": "OpenAI-only moderation results, kept as a dict"}
# openai's union members holysheep does not model (custom tools are not part of holysheep's tool support).
_SKIPPED = {"ChatCompletionMessageCustomToolCall"}

ROOTS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (oc.ChatCompletion, ht.ChatCompletion),
    (oc.ChatCompletionChunk, ht.ChatCompletionChunk),
    (oc.ParsedChatCompletion, ht.ParsedChatCompletion),
    (ot.CreateEmbeddingResponse, ht.CreateEmbeddingResponse),
    (ot.Model, ht.Model),
    (SyncPage[ot.Model], ModelList),
]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic model classes inside a field's annotation (through Optional, List, Union, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, BaseModel):  # an unparametrized generic's origin
        return [origin]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models(arg)
    return found


def _default(field: Any) -> Any:
    if field.default_factory is not None:
        return field.default_factory()
    return field.default


def _walk(theirs: type[BaseModel], ours: type[BaseModel], path: str, seen: set[tuple[type, type]],
          problems: list[str]) -> int:
    if (theirs, ours) in seen:
        return 0
    seen.add((theirs, ours))
    checked = 0
    for name, field in theirs.model_fields.items():
        where = f"{path}.{name}"
        mine = ours.model_fields.get(name)
        if mine is None:
            problems.append(f"{where}: missing on {ours.__name__}")
            continue
        checked += 1
        if not field.is_required():
            if mine.is_required():
                problems.append(f"{where}: required on {ours.__name__}, openai defaults to {_default(field)!r}")
            elif _default(mine) != _default(field):
                problems.append(f"{where}: default {_default(mine)!r}, openai {_default(field)!r}")
        their_models = [m for m in _models(field.annotation) if m.__name__ not in _SKIPPED]
        if not their_models:
            continue
        if name in _AS_JSON:
            continue
        my_models = _models(mine.annotation)
        if len(my_models) != 1:
            problems.append(f"{where}: openai has {[m.__name__ for m in their_models]}, holysheep {my_models}")
            continue
        for model in their_models:
            checked += _walk(model, my_models[0], where, seen, problems)
    return checked


@pytest.mark.parametrize(("theirs", "ours"), ROOTS, ids=[o.__name__ for _, o in ROOTS])
def test_every_openai_field_exists_with_openais_default(theirs: type[BaseModel], ours: type[BaseModel]) -> None:
    problems: list[str] = []
    checked = _walk(theirs, ours, ours.__name__, set(), problems)
    assert problems == []
    assert checked >= 4


def test_the_walk_reaches_nested_parts() -> None:
    """The walk follows message, delta, usage details and logprobs (a walk that stopped at the top would pass)."""
    seen: set[tuple[type, type]] = set()
    _walk(oc.ChatCompletion, ht.ChatCompletion, "c", seen, [])
    _walk(oc.ChatCompletionChunk, ht.ChatCompletionChunk, "k", seen, [])
    names = {ours.__name__ for _, ours in seen}
    assert {"ChatCompletionMessage", "Annotation", "AnnotationURLCitation", "ChatCompletionAudio", "FunctionCall",
            "ToolCall", "ChoiceLogprobs", "ChatCompletionTokenLogprob", "TopLogprob", "PromptTokensDetails",
            "CompletionTokensDetails", "ChoiceDelta", "ChoiceDeltaAudio", "ChoiceDeltaFunctionCall",
            "ChoiceDeltaToolCall", "ChoiceDeltaFunction"} <= names


def test_the_walk_reports_a_missing_field_and_a_wrong_default() -> None:
    class Theirs(BaseModel):
        a: int | None = None
        b: str | None = None

    class Ours(BaseModel):
        a: int | None = 0

    problems: list[str] = []
    _walk(Theirs, Ours, "x", set(), problems)
    assert problems == ["x.a: default 0, openai None", "x.b: missing on Ours"]


def test_missing_openai_fields_read_as_none() -> None:
    """A server that leaves openai's optional fields out: they read as None, as with openai."""
    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    ours, theirs = ht.ChatCompletion.model_validate(body), oc.ChatCompletion.model_validate(body)
    for obj in (ours, theirs):
        message = obj.choices[0].message
        assert (message.annotations, message.audio, message.function_call, obj.service_tier,
                obj.choices[0].logprobs) == (None, None, None, None, None)
    assert ours._request_id is None
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "hi"}}]}
    assert ht.ChatCompletionChunk.model_validate(chunk).choices[0].delta.function_call is None


def test_logprobs_are_typed_as_openais() -> None:
    body = {"choices": [{"index": 0, "message": {"content": "a"},
                         "logprobs": {"content": [{"token": "a", "logprob": -0.5, "bytes": [97],
                                                   "top_logprobs": [{"token": "a", "logprob": -0.5}]}]}}]}
    ours, theirs = ht.ChatCompletion.model_validate(body), oc.ChatCompletion.model_validate({
        **body, "id": "c", "created": 1, "model": "m", "object": "chat.completion",
        "choices": [{**body["choices"][0], "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "a"}}]})
    mine, their = ours.choices[0].logprobs, theirs.choices[0].logprobs
    assert mine is not None and their is not None and mine.content and their.content
    assert (mine.content[0].token, mine.content[0].logprob, mine.content[0].top_logprobs[0].token) == (
        their.content[0].token, their.content[0].logprob, their.content[0].top_logprobs[0].token)


def test_odd_shapes_of_the_optional_parts_do_not_fail_the_reply() -> None:
    """A server's own idea of these fields (a string, a number) reads as None: the answer still arrives."""
    body = {"choices": [{"message": {"content": "x", "annotations": ["a note"], "audio": "none",
                                     "function_call": 3}, "logprobs": "n/a"}], "moderation": "off"}
    completion = ht.ChatCompletion.model_validate(body)
    message = completion.choices[0].message
    assert (message.content, message.annotations, message.audio, message.function_call) == ("x", None, None, None)
    assert completion.choices[0].logprobs is None and completion.moderation is None
    chunk = ht.ChatCompletionChunk.model_validate({"choices": [{"delta": {"content": "y", "audio": 1,
                                                                          "function_call": "f"}}]})
    assert (chunk.choices[0].delta.content, chunk.choices[0].delta.audio, chunk.choices[0].delta.function_call) == (
        "y", None, None)

"""``client.chat.completions.parse``: structured outputs for the sync and async clients.

Both drive the same sans-I/O re-ask loop (`ParsePlan.steps`); they differ only in how a request is sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from typing_extensions import Unpack

from holysheep._clients.resources.chat import Executor, parse_chat_completion
from holysheep._core.request import ChatParamsBase, ParseParams, RequestSpec, ToolInput, build_chat_spec
from holysheep._core.sentinels import given, or_default
from holysheep.types.chat import ChatCompletionMessageParam, Message, ModelName

if TYPE_CHECKING:
    from holysheep._clients.parsed_stream import AsyncParsedStream, ParsedStream
    from holysheep._core.structured import OnRefusal, ParsePlan
    from holysheep.types.parsed import ParsedChatCompletion

__all__ = ["AsyncParse", "SyncParse"]

T = TypeVar("T")
Messages = Iterable[ChatCompletionMessageParam | Message]


def _spec(request: Mapping[str, Any], *, stream: bool = False) -> RequestSpec:
    params = {k: v for k, v in request.items() if k not in ("model", "messages")}
    return build_chat_spec(model=request["model"], messages=request["messages"], stream=stream, params=params,
                           parse=parse_chat_completion)


def _raw_spec(plan: ParsePlan[object], stream: bool) -> RequestSpec | None:
    """Under ``with_raw_response`` / ``with_streaming_response``: the one request whose body ``parse()`` turns into
    the `ParsedChatCompletion` (as openai's ``with_raw_response.parse``); None for a plain call."""
    from holysheep._core.raw_response import RAW

    if not RAW.get():
        return None
    if stream or plan.max_repairs:
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError("with_raw_response.parse() sends one request and returns its response: leave out "
                                  "stream=True and max_repairs (or call parse() without with_raw_response).",
                                  field="max_repairs" if plan.max_repairs else "stream")
    steps = plan.steps()
    request = next(steps)

    def parse(content: bytes) -> ParsedChatCompletion[Any]:
        try:
            steps.send(parse_chat_completion(content))
        except StopIteration as stop:
            result: ParsedChatCompletion[object] = stop.value
            return result
        raise AssertionError("max_repairs=0 sends no re-ask")  # pragma: no cover

    return dataclasses.replace(_spec(request), parse=parse)




class SyncParse:
    """Adds ``parse`` to the sync client's ``chat.completions``."""

    _client: Executor

    @overload
    def parse(self, *, model: ModelName, messages: Messages, response_format: type[T],
              stream: Literal[False] = False, max_repairs: int = 0,
              on_refusal: OnRefusal = "return",
              **params: Unpack[ParseParams]) -> ParsedChatCompletion[T]: ...

    @overload
    def parse(self, *, model: ModelName, messages: Messages, response_format: type[T], stream: Literal[True],
              max_repairs: int = 0,
              on_refusal: OnRefusal = "return", **params: Unpack[ParseParams]) -> ParsedStream[T]: ...

    @overload
    def parse(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | object,
              stream: Literal[False] = False, max_repairs: int = 0,
              on_refusal: OnRefusal = "return",
              **params: Unpack[ParseParams]) -> ParsedChatCompletion[Any]: ...

    @overload
    def parse(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | object,
              stream: Literal[True], max_repairs: int = 0,
              on_refusal: OnRefusal = "return",
              **params: Unpack[ParseParams]) -> ParsedStream[Any]: ...

    @overload
    def parse(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput], stream: Literal[False] = False,
              max_repairs: int = 0,
              on_refusal: OnRefusal = "return", **params: Unpack[ChatParamsBase]) -> ParsedChatCompletion[Any]: ...

    @overload
    def parse(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput], stream: Literal[True],
              max_repairs: int = 0,
              on_refusal: OnRefusal = "return", **params: Unpack[ChatParamsBase]) -> ParsedStream[Any]: ...

    def parse(self, *, model: ModelName, messages: Messages, response_format: object = None, stream: bool = False,
              max_repairs: int = 0,
              on_refusal: OnRefusal = "return", **params: object) -> ParsedChatCompletion[Any] | ParsedStream[Any]:
        """Create a chat completion and validate its content as ``response_format``.

        ``response_format``: a pydantic model, a type pydantic understands (``list[Model]``,
        ``Literal["a", "b"]``: sent wrapped as ``{"value": ...}`` and unwrapped for you) or a JSON-schema dict,
        sent as a strict ``json_schema``. Returns a `ParsedChatCompletion` whose ``choices[i].message.parsed``
        is the value. Failures are typed: `StructuredOutputError` (not JSON or does not validate; keeps
        ``raw_text`` and ``validation_error``), `RefusalError`, `LengthFinishReasonError`,
        `ContentFilterFinishReasonError`. ``tools=[pydantic_function_tool(Model), ...]`` (with or without
        ``response_format``) fills ``tool_calls[i].function.parsed_arguments`` with a ``Model``; arguments
        that do not validate raise `ToolArgumentsError` (the field, the raw arguments). ``max_repairs=N``
        re-asks up to N times with the model's reply and the validation errors; ``usage`` and ``cost`` count
        every request. A refusal comes back as openai's does (``message.refusal`` set, ``parsed=None``);
        ``on_refusal="raise"`` raises `RefusalError` instead. ``stream=True`` returns a
        `ParsedStream` whose ``get_final_completion()`` is parsed. Other arguments are those of ``create``.
        See ``docs/structured-outputs.md``.
        """
        from holysheep._core.structured import plan_parse  # lazy: `import holysheep` stays light

        stream = or_default(stream, False)
        plan = plan_parse(given({"model": model, "messages": messages, "response_format": response_format,
                                 "max_repairs": max_repairs, "on_refusal": on_refusal, **params}), stream=stream)
        raw = _raw_spec(plan, stream)
        if raw is not None:
            return self._client._execute(raw)  # type: ignore[no-any-return]  # an APIResponse
        if stream:
            from holysheep._clients.parsed_stream import ParsedStream

            return ParsedStream(self._client._execute(_spec(plan.params, stream=True)), plan.format,
                                plan.tools, plan.on_refusal)
        steps = plan.steps()
        request = next(steps)
        while True:
            completion = self._client._execute(_spec(request))
            try:
                request = steps.send(completion)
            except StopIteration as stop:
                result: ParsedChatCompletion[object] = stop.value
                return result



class AsyncParse:
    """Adds ``parse`` to the async client's ``chat.completions`` (``await`` it)."""

    _client: Executor

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, response_format: type[T],
                    stream: Literal[False] = False, max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: Unpack[ParseParams]) -> ParsedChatCompletion[T]: ...

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, response_format: type[T],
                    stream: Literal[True], max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: Unpack[ParseParams]) -> AsyncParsedStream[T]: ...

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | object,
                    stream: Literal[False] = False, max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: Unpack[ParseParams]) -> ParsedChatCompletion[Any]: ...

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | object,
                    stream: Literal[True], max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: Unpack[ParseParams]) -> AsyncParsedStream[Any]: ...

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput],
                    stream: Literal[False] = False, max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: Unpack[ChatParamsBase]) -> ParsedChatCompletion[Any]: ...

    @overload
    async def parse(self, *, model: ModelName, messages: Messages, tools: Sequence[ToolInput], stream: Literal[True],
                    max_repairs: int = 0,
                    on_refusal: OnRefusal = "return", **params: Unpack[ChatParamsBase]) -> AsyncParsedStream[Any]: ...

    async def parse(self, *, model: ModelName, messages: Messages, response_format: object = None,
                    stream: bool = False, max_repairs: int = 0,
                    on_refusal: OnRefusal = "return",
                    **params: object) -> ParsedChatCompletion[Any] | AsyncParsedStream[Any]:
        """Create a chat completion (``await`` it) and validate its content as ``response_format``.

        Same arguments, result and typed failures as the sync ``Client.chat.completions.parse``;
        ``stream=True`` returns an `AsyncParsedStream` whose ``await get_final_completion()`` is parsed.
        See ``docs/structured-outputs.md``.
        """
        from holysheep._core.structured import plan_parse  # lazy: `import holysheep` stays light

        stream = or_default(stream, False)
        plan = plan_parse(given({"model": model, "messages": messages, "response_format": response_format,
                                 "max_repairs": max_repairs, "on_refusal": on_refusal, **params}), stream=stream)
        raw = _raw_spec(plan, stream)
        if raw is not None:
            return await self._client._execute(raw)  # type: ignore[no-any-return]  # an APIResponse
        if stream:
            from holysheep._clients.parsed_stream import AsyncParsedStream

            return AsyncParsedStream(await self._client._execute(_spec(plan.params, stream=True)), plan.format,
                                     plan.tools, plan.on_refusal)
        steps = plan.steps()
        request = next(steps)
        while True:
            completion = await self._client._execute(_spec(request))
            try:
                request = steps.send(completion)
            except StopIteration as stop:
                result: ParsedChatCompletion[object] = stop.value
                return result


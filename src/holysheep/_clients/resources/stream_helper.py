"""``client.chat.completions.stream(...)`` for the sync and async clients (openai's event-stream helper)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from typing_extensions import Unpack

from holysheep._clients.resources.chat import Executor, parse_chat_completion
from holysheep._clients.resources.structured import _spec
from holysheep._core.request import ChatParamsNoFormat, ParseParams, RequestSpec, build_chat_spec
from holysheep._core.sentinels import given, or_default
from holysheep.types.chat import ChatCompletionMessageParam, Message, ModelName

if TYPE_CHECKING:
    from holysheep._clients.chat_stream import AsyncChatCompletionStreamManager, ChatCompletionStreamManager
    from holysheep._core.schema import ResponseFormat

__all__ = ["AsyncStreamHelper", "SyncStreamHelper", "stream_spec"]

T = TypeVar("T")
Messages = Iterable[ChatCompletionMessageParam | Message]


def stream_spec(model: Any, messages: Any, response_format: object,
                params: Mapping[str, object]) -> tuple[RequestSpec, ResponseFormat[Any] | None, Any]:
    """The streamed request, the format its content is parsed as (a type passed as ``response_format``;
    a dict is sent as given and not parsed, as in openai) and the tools it sends (with a type, functions and
    models made strict tools, so their calls get ``parsed_arguments``). Raises `InvalidRequestError` before
    any I/O."""
    params = given(params)
    response_format = or_default(response_format, None)
    if "stream" in params:
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError("stream() always streams: leave out stream=.", field="stream")
    if "on_refusal" in params:
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError("stream() returns a refusal as openai-python does (message.refusal set, parsed "
                                  "None, refusal.* events); on_refusal= is a parse() option: leave it out.",
                                  field="on_refusal")
    if response_format is not None and not isinstance(response_format, Mapping):
        from holysheep._core.structured import plan_parse

        plan = plan_parse({"model": model, "messages": messages, "response_format": response_format, **params},
                          stream=True)
        return _spec(plan.params, stream=True), plan.format, plan.params.get("tools")
    rest = dict(params)
    if response_format is not None:
        rest["response_format"] = response_format
    return build_chat_spec(model=model, messages=messages, stream=True, params=rest,
                           parse=parse_chat_completion), None, rest.get("tools")


class SyncStreamHelper:
    """Adds ``stream`` to the sync client's ``chat.completions``."""

    _client: Executor

    @overload
    def stream(self, *, model: ModelName, messages: Messages, response_format: type[T],
               **params: Unpack[ParseParams]) -> ChatCompletionStreamManager[T]: ...

    @overload
    def stream(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | None = None,
               **params: Unpack[ChatParamsNoFormat]) -> ChatCompletionStreamManager[Any]: ...

    def stream(self, *, model: ModelName, messages: Messages, response_format: Any = None,
               **params: object) -> ChatCompletionStreamManager[Any]:
        """Stream a chat completion as typed events; use it as ``with ... as stream: for event in stream``.

        openai-python's helper: the events are ``chunk``, ``content.delta``/``.done`` (``parsed`` with
        ``response_format=Model``), ``refusal.delta``/``.done``, ``tool_calls.function.arguments.delta``/
        ``.done``, ``logprobs.*``, plus ``reasoning.delta``/``.done`` for reasoning servers. The request is
        sent on entering the ``with``; arguments (those of ``create``) are checked now.
        ``stream.get_final_completion()`` returns the `ParsedChatCompletion`.
        """
        from holysheep._clients.chat_stream import ChatCompletionStreamManager

        spec, fmt, tools = stream_spec(model, messages, response_format, params)
        return ChatCompletionStreamManager(lambda: self._client._execute(spec), fmt, tools)


class AsyncStreamHelper:
    """Adds ``stream`` to the async client's ``chat.completions`` (``async with``)."""

    _client: Executor

    @overload
    def stream(self, *, model: ModelName, messages: Messages, response_format: type[T],
               **params: Unpack[ParseParams]) -> AsyncChatCompletionStreamManager[T]: ...

    @overload
    def stream(self, *, model: ModelName, messages: Messages, response_format: Mapping[str, Any] | None = None,
               **params: Unpack[ChatParamsNoFormat]) -> AsyncChatCompletionStreamManager[Any]: ...

    def stream(self, *, model: ModelName, messages: Messages, response_format: Any = None,
               **params: object) -> AsyncChatCompletionStreamManager[Any]:
        """Stream a chat completion as typed events: ``async with ... as stream: async for event in stream``.
        Same events and arguments as the sync ``Client.chat.completions.stream``."""
        from holysheep._clients.chat_stream import AsyncChatCompletionStreamManager

        spec, fmt, tools = stream_spec(model, messages, response_format, params)
        return AsyncChatCompletionStreamManager(lambda: self._client._execute(spec), fmt, tools)

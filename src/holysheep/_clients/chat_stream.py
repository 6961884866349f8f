"""``client.chat.completions.stream(...)``: openai-python's event-stream helper over holysheep's chat streams.

``with client.chat.completions.stream(...) as stream:`` sends the request on entry and yields typed events
(`holysheep.types.chat_stream`); ``get_final_completion()`` returns the folded, parsed completion.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from holysheep._core.chat_events import ChatEventState, strict_tool_names
from holysheep._core.stream_state import StreamMetrics
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk
from holysheep.types.chat_stream import ChatCompletionStreamEvent
from holysheep.types.parsed import ParsedChatCompletion

if TYPE_CHECKING:
    from holysheep._clients.streaming import AsyncStream, Stream
    from holysheep._core.schema import ResponseFormat
    from holysheep._core.tools import ToolSet


def _typed_tools(tools: object) -> ToolSet | None:
    """The request's tools as a `ToolSet` when some are typed (``pydantic_function_tool``/``function_tool``)."""
    if not isinstance(tools, (list, tuple)) or not tools:
        return None
    from holysheep._core.tools import FunctionTool, tool_set  # lazy: only typed tools need the schema code

    return tool_set(tools) if any(isinstance(t, FunctionTool) for t in tools) else None

__all__ = ["AsyncChatCompletionStream", "AsyncChatCompletionStreamManager", "ChatCompletionStream",
           "ChatCompletionStreamManager"]

T = TypeVar("T")


def _parsed(completion: ChatCompletion, fmt: ResponseFormat[object] | None,
            tools: ToolSet | None = None) -> ParsedChatCompletion[Any]:
    if fmt is not None or tools is not None:
        from holysheep._core.structured import parse_completion

        return parse_completion(fmt, completion, None, tools)
    result: ParsedChatCompletion[object] = ParsedChatCompletion.model_validate(
        completion.model_dump(by_alias=True, exclude_unset=True))
    result._set_transport(completion._transport)
    return result


class _Base(Generic[T]):
    _stream: Stream[ChatCompletionChunk] | AsyncStream[ChatCompletionChunk]

    def __init__(self, fmt: ResponseFormat[object] | None, tools: object) -> None:
        self._fmt = fmt
        self._tool_set = _typed_tools(tools)
        self._strict_tools = strict_tool_names(tools)
        parse_arguments = self._typed_arguments if self._tool_set is not None else None
        self._events = ChatEventState(fmt=fmt, tools=tools, snapshot=self._snapshot, parse_arguments=parse_arguments)
        self._final: ParsedChatCompletion[T] | None = None

    def _typed_arguments(self, name: str, arguments: str) -> object:
        """A finished call's ``parsed_arguments``: the tool's model for a typed tool (raises `ToolArgumentsError`
        naming the field), the decoded JSON for another strict tool, else None."""
        assert self._tool_set is not None
        if self._tool_set.typed(name) is None:
            if name not in self._strict_tools:
                return None
            from holysheep._core.json_check import load_json

            try:
                return load_json(arguments)
            except ValueError:
                return None
        from holysheep._core.structured import tool_arguments
        from holysheep.types.chat import Function, ToolCall

        return tool_arguments(self._tool_set, ToolCall(function=Function(name=name, arguments=arguments)),
                              self._snapshot(), 1)

    def _snapshot(self) -> ChatCompletion:
        return self._stream._state.final_completion()

    @property
    def current_completion_snapshot(self) -> ChatCompletion:
        """The completion folded from the chunks received so far."""
        return self._snapshot()

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id``."""
        return self._stream.request_id

    @property
    def metrics(self) -> StreamMetrics:
        """TTFT (and first reasoning / first content), inter-token latency and throughput."""
        return self._stream.metrics

    @property
    def response(self) -> Any:
        """The HTTP response the stream reads (headers, status)."""
        return self._stream.response

    def _finish(self, completion: ChatCompletion) -> ParsedChatCompletion[T]:
        if self._final is None:
            self._final = _parsed(completion, self._fmt, self._tool_set)
        return self._final


class ChatCompletionStream(_Base[T]):
    """Iterate for events (``event.type``: ``chunk``, ``content.delta``, ``content.done``, ``refusal.*``,
    ``tool_calls.function.arguments.*``, ``logprobs.*``, and holysheep's ``reasoning.*``)."""

    def __init__(self, stream: Stream[ChatCompletionChunk], fmt: ResponseFormat[object] | None, tools: object) -> None:
        self._stream = self._sync = stream
        super().__init__(fmt, tools)
        self._iterator = self._iterate()

    def _iterate(self) -> Iterator[ChatCompletionStreamEvent[T]]:
        state = self._sync._state
        for chunk in self._sync:
            yield from self._events.handle_chunk(chunk, state.raw(chunk))

    def __iter__(self) -> Iterator[ChatCompletionStreamEvent[T]]:
        return self._iterator

    def __next__(self) -> ChatCompletionStreamEvent[T]:
        return next(self._iterator)

    def until_done(self) -> ChatCompletionStream[T]:
        """Read the rest of the stream (its events are dropped)."""
        for _ in self._iterator:
            pass
        return self

    def get_final_completion(self) -> ParsedChatCompletion[T]:
        """Read to the end, then return the folded completion (``message.parsed`` set with
        ``response_format=Model``; raises the structured-output errors when it does not validate)."""
        self.until_done()
        return self._finish(self._sync.get_final_completion())

    def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        self._sync.close()


class ChatCompletionStreamManager(Generic[T]):
    """What ``chat.completions.stream(...)`` returns: ``with`` it to send the request and get the stream."""

    def __init__(self, open_stream: Callable[[], Stream[ChatCompletionChunk]], fmt: ResponseFormat[object] | None,
                 tools: object) -> None:
        self._open = open_stream
        self._fmt = fmt
        self._tools = tools
        self._stream: ChatCompletionStream[T] | None = None

    def __enter__(self) -> ChatCompletionStream[T]:
        self._stream = ChatCompletionStream(self._open(), self._fmt, self._tools)
        return self._stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._stream is not None:
            self._stream.close()


class AsyncChatCompletionStream(_Base[T]):
    """``async for`` the events (the same as `ChatCompletionStream`'s)."""

    def __init__(self, stream: AsyncStream[ChatCompletionChunk], fmt: ResponseFormat[object] | None,
                 tools: object) -> None:
        self._stream = self._async = stream
        super().__init__(fmt, tools)
        self._iterator = self._iterate()

    async def _iterate(self) -> AsyncIterator[ChatCompletionStreamEvent[T]]:
        state = self._async._state
        async for chunk in self._async:
            for event in self._events.handle_chunk(chunk, state.raw(chunk)):
                yield event

    def __aiter__(self) -> AsyncIterator[ChatCompletionStreamEvent[T]]:
        return self._iterator

    async def __anext__(self) -> ChatCompletionStreamEvent[T]:
        return await self._iterator.__anext__()

    async def until_done(self) -> AsyncChatCompletionStream[T]:
        """Read the rest of the stream (its events are dropped)."""
        async for _ in self._iterator:
            pass
        return self

    async def get_final_completion(self) -> ParsedChatCompletion[T]:
        """Read to the end, then return the folded, parsed completion."""
        await self.until_done()
        return self._finish(await self._async.get_final_completion())

    async def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        await self._iterator.aclose()  # type: ignore[attr-defined]
        await self._async.close()


class AsyncChatCompletionStreamManager(Generic[T]):
    """What the async ``chat.completions.stream(...)`` returns: ``async with`` it."""

    def __init__(self, open_stream: Callable[[], Awaitable[AsyncStream[ChatCompletionChunk]]],
                 fmt: ResponseFormat[object] | None, tools: object) -> None:
        self._open = open_stream
        self._fmt = fmt
        self._tools = tools
        self._stream: AsyncChatCompletionStream[T] | None = None

    async def __aenter__(self) -> AsyncChatCompletionStream[T]:
        self._stream = AsyncChatCompletionStream(await self._open(), self._fmt, self._tools)
        return self._stream

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._stream is not None:
            await self._stream.close()

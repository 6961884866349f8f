"""Streams for ``parse(..., stream=True)``: the usual chunks, then ``get_final_completion()`` parsed.

Partial JSON is never validated: the content is checked once, when the stream has ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from holysheep._core.closing import AsyncClosing, SyncClosing
from holysheep._core.stream_state import StreamMetrics
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk
from holysheep.types.parsed import ParsedChatCompletion

if TYPE_CHECKING:
    from holysheep._clients.streaming import AsyncStream, Stream
    from holysheep._core.schema import ResponseFormat
    from holysheep._core.structured import OnRefusal
    from holysheep._core.tools import ToolSet

__all__ = ["AsyncParsedStream", "ParsedStream"]

T = TypeVar("T")


class _Refusals:
    """Collects ``delta.refusal`` pieces per choice (the folded completion keeps only content)."""

    def __init__(self) -> None:
        self.pieces: dict[int, list[str]] = {}

    def see(self, chunk: ChatCompletionChunk) -> None:
        for choice in chunk.choices:
            if choice.delta.refusal:
                self.pieces.setdefault(choice.index, []).append(choice.delta.refusal)

    def apply(self, completion: ChatCompletion) -> None:
        for choice in completion.choices:
            if choice.index in self.pieces:
                choice.message.refusal = "".join(self.pieces[choice.index])


class _ParsedStreamBase(Generic[T]):
    _stream: Stream[ChatCompletionChunk] | AsyncStream[ChatCompletionChunk]

    def __init__(self, fmt: ResponseFormat[T] | None, tools: ToolSet | None = None,
                 on_refusal: OnRefusal = "return") -> None:
        self._format = fmt
        self._tools = tools
        self._on_refusal: OnRefusal = on_refusal
        self._refusals = _Refusals()
        self._parsed: ParsedChatCompletion[T] | None = None

    @property
    def request_id(self) -> str | None:
        """The server's ``x-request-id``."""
        return self._stream.request_id

    @property
    def metrics(self) -> StreamMetrics:
        """TTFT, inter-token latency and throughput (final once the stream has ended)."""
        return self._stream.metrics

    @property
    def text(self) -> str:
        """The raw content received so far (choice 0): partial JSON while streaming."""
        return self._stream.text

    def _finish(self, completion: ChatCompletion) -> ParsedChatCompletion[T]:
        if self._parsed is None:
            from holysheep._core.structured import parse_completion  # lazy: `import holysheep` stays light

            self._refusals.apply(completion)
            self._parsed = parse_completion(self._format, completion, None, self._tools, self._on_refusal)
        return self._parsed


class ParsedStream(SyncClosing, _ParsedStreamBase[T]):
    """``parse(..., stream=True)`` on the sync client: iterate for `ChatCompletionChunk`s (use ``with``);
    ``get_final_completion()`` reads to the end and returns the `ParsedChatCompletion`."""

    def __init__(self, stream: Stream[ChatCompletionChunk], fmt: ResponseFormat[T] | None,
                 tools: ToolSet | None = None, on_refusal: OnRefusal = "return") -> None:
        super().__init__(fmt, tools, on_refusal)
        self._stream = self._sync = stream

    def __iter__(self) -> Iterator[ChatCompletionChunk]:
        return self

    def __next__(self) -> ChatCompletionChunk:
        chunk = next(self._sync)
        self._refusals.see(chunk)
        return chunk

    def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        self._sync.close()

    def get_final_completion(self) -> ParsedChatCompletion[T]:
        """Read the rest of the stream, then validate the content (raises the structured-output errors)."""
        for _ in self:
            pass
        return self._finish(self._sync.get_final_completion())


class AsyncParsedStream(AsyncClosing, _ParsedStreamBase[T]):
    """``parse(..., stream=True)`` on the async client: ``async for`` the chunks inside ``async with``;
    ``await get_final_completion()`` returns the `ParsedChatCompletion`."""

    def __init__(self, stream: AsyncStream[ChatCompletionChunk], fmt: ResponseFormat[T] | None,
                 tools: ToolSet | None = None, on_refusal: OnRefusal = "return") -> None:
        super().__init__(fmt, tools, on_refusal)
        self._stream = self._async = stream

    def __aiter__(self) -> AsyncParsedStream[T]:
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        chunk = await self._async.__anext__()
        self._refusals.see(chunk)
        return chunk

    async def close(self) -> None:
        """Stop reading and release the connection (idempotent)."""
        await self._async.close()

    async def get_final_completion(self) -> ParsedChatCompletion[T]:
        """Read the rest of the stream, then validate the content (raises the structured-output errors)."""
        async for _ in self:
            pass
        return self._finish(await self._async.get_final_completion())

"""``client.responses``: the Responses API on both clients (``create``, ``stream``, ``parse``, ``batch``), built on
the Responses `WireFormat` (``_core/wire/responses.py``) like any other format."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from holysheep._clients.resources.chat import Resource
from holysheep._clients.resources.tools import arun_tools, plan_tools, run_tools
from holysheep._clients.resources.wire import AsyncWireResource, WireResource, _AsyncClient, _SyncClient
from holysheep._core.wire.responses import ResponsesWire, parse_response, text_format_param
from holysheep._core.wire.responses_bridge import BRIDGE_MODES, AutoResponsesWire
from holysheep._exceptions import NotFoundError
from holysheep.types.chat import ChatCompletion
from holysheep.types.responses import ParsedResponse, Response, ResponseStreamEvent

if TYPE_CHECKING:
    from holysheep._clients.streaming import AsyncStream, Stream
    from holysheep._core.request import RequestSpec, ToolInput
    from holysheep._core.wire.responses_tools import ResponseToolRunResult
    from holysheep._engine.results import BatchResults

__all__ = ["AsyncResponseStream", "AsyncResponseStreamManager", "AsyncResponses", "ResponseStream",
           "ResponseStreamManager", "Responses"]

T = TypeVar("T")


def _spec(wire: ResponsesWire, params: dict[str, object], stream: bool, text_format: object = None) -> RequestSpec:
    if text_format is None:
        return wire.build(params, stream=stream)
    text = params.get("text")
    params["text"] = {**(text if isinstance(text, dict) else {}), "format": text_format_param(text_format)}
    return wire.build(params, stream=stream, parse=_parser(text_format))


def _parsed(response: Response, text_format: object) -> ParsedResponse[object]:
    """``response`` with ``output_parsed``: its text validated as ``text_format`` (None without text)."""
    from holysheep._core.schema import response_format_for

    parsed: ParsedResponse[object] = ParsedResponse.model_validate(response.model_dump(by_alias=True,
                                                                                   exclude_unset=True))
    parsed._set_transport(response._transport)
    text = response.output_text
    parsed.output_parsed = response_format_for(text_format).validate(text) if text else None
    return parsed


def _parser(text_format: object) -> Callable[[bytes], object]:
    return lambda content: _parsed(parse_response(content), text_format)


def _final(stream: Stream[ResponseStreamEvent] | AsyncStream[ResponseStreamEvent], text_format: object) -> Response:
    folded: object = stream._final()
    if not isinstance(folded, Response):  # a bridged stream folds a chat completion
        from holysheep._core.wire.responses_bridge import to_response

        assert isinstance(folded, ChatCompletion)
        folded = to_response(folded)
    response = folded
    return _parsed(response, text_format) if text_format is not None else response


class ResponseStream:
    """``with client.responses.stream(...) as stream``: iterate for `ResponseStreamEvent`s;
    ``get_final_response()`` reads to the end and returns the `Response` (a `ParsedResponse` with
    ``text_format``)."""

    def __init__(self, stream: Stream[ResponseStreamEvent], text_format: object = None) -> None:
        self._stream = stream
        self._format = text_format

    def __iter__(self) -> Iterator[ResponseStreamEvent]:
        return iter(self._stream)

    def until_done(self) -> ResponseStream:
        """Read every event that is left."""
        for _ in self._stream:
            pass
        return self

    def get_final_response(self) -> Response:
        """Read to the end; the response the stream ended with."""
        self.until_done()
        return _final(self._stream, self._format)

    def close(self) -> None:
        self._stream.close()


class ResponseStreamManager:
    """What ``client.responses.stream(...)`` returns: the request is sent on ``with`` entry."""

    def __init__(self, open_stream: Callable[[], Stream[ResponseStreamEvent]], text_format: object) -> None:
        self._open, self._format = open_stream, text_format
        self._stream: ResponseStream | None = None

    def __enter__(self) -> ResponseStream:
        self._stream = ResponseStream(self._open(), self._format)
        return self._stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._stream is not None:
            self._stream.close()


class AsyncResponseStream:
    """The async `ResponseStream` (``async for``; ``await stream.get_final_response()``)."""

    def __init__(self, stream: AsyncStream[ResponseStreamEvent], text_format: object = None) -> None:
        self._stream = stream
        self._format = text_format

    def __aiter__(self) -> AsyncIterator[ResponseStreamEvent]:
        return self._stream.__aiter__()

    async def until_done(self) -> AsyncResponseStream:
        """Read every event that is left."""
        async for _ in self._stream:
            pass
        return self

    async def get_final_response(self) -> Response:
        """Read to the end; the response the stream ended with."""
        await self.until_done()
        return _final(self._stream, self._format)

    async def close(self) -> None:
        await self._stream.close()


class AsyncResponseStreamManager:
    """What ``AsyncClient.responses.stream(...)`` returns: the request is sent on ``async with`` entry."""

    def __init__(self, open_stream: Callable[[], Awaitable[AsyncStream[ResponseStreamEvent]]],
                 text_format: object) -> None:
        self._open, self._format = open_stream, text_format
        self._stream: AsyncResponseStream | None = None

    async def __aenter__(self) -> AsyncResponseStream:
        self._stream = AsyncResponseStream(await self._open(), self._format)
        return self._stream

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._stream is not None:
            await self._stream.close()


class _Bridging(Resource):
    """What both clients' ``responses`` share: the format (native, or bridged to chat completions)."""

    format: AutoResponsesWire

    @property
    def bridge(self) -> str:
        """When ``responses`` calls go to chat completions instead of ``/responses``: ``"auto"`` (the default:
        after this server answered 404 for ``/responses``, remembered by this client), ``"always"`` or
        ``"never"``. See docs/responses.md."""
        return self.format.mode

    @bridge.setter
    def bridge(self, mode: str) -> None:
        if mode not in BRIDGE_MODES:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError(f"responses.bridge must be 'auto', 'always' or 'never', got {mode!r}.",
                                      field="bridge")
        self.format.mode = mode


class Responses(_Bridging):
    """``client.responses`` on the sync client (openai-python's ``client.responses``)."""

    def __init__(self, client: _SyncClient) -> None:
        super().__init__(client)
        self.format = AutoResponsesWire(str(client.config.base_url))
        self._formatted = WireResource(client, self.format)  # the seam's resource: what batch() runs on

    def _run(self, params: dict[str, object], stream: bool, text_format: object = None) -> Any:
        spec = _spec(self.format, params, stream, text_format)
        try:
            return self._client._execute(spec)
        except NotFoundError as exc:
            if not self.format.learn(exc, spec):
                raise
        return self._client._execute(_spec(self.format, params, stream, text_format))  # bridged

    @overload
    def create(self, *, model: str, input: object = None, stream: Literal[False] = False,
               **params: object) -> Response: ...

    @overload
    def create(self, *, model: str, input: object = None, stream: Literal[True],
               **params: object) -> Stream[ResponseStreamEvent]: ...

    def create(self, *, model: str, input: object = None, stream: bool = False,
               **params: object) -> Response | Stream[ResponseStreamEvent]:
        """Create a model response (``POST /responses``): ``input`` (text or input items), ``instructions``,
        ``tools``, ``text``, ``max_output_tokens``, ``previous_response_id``, ... as openai-python takes them,
        plus ``extra_body``/``extra_headers``/``extra_query``/``timeout``/``max_retries``. With ``stream=True``,
        a stream of `ResponseStreamEvent`; else a `Response`. Same retries, rate limits, hooks, spans and
        response cache as ``chat.completions.create``."""
        result: Response | Stream[ResponseStreamEvent] = self._run({"model": model, "input": input, **params}, stream)
        return result

    def parse(self, *, model: str, text_format: type[T], input: object = None, **params: object) -> ParsedResponse[T]:
        """``create`` with ``text.format`` set from ``text_format`` (a pydantic model, strict JSON schema); the
        reply's text validated as it in ``output_parsed``."""
        result: ParsedResponse[T] = self._run({"model": model, "input": input, **params}, False, text_format)
        return result

    def stream(self, *, model: str, input: object = None, text_format: object = None,
               **params: object) -> ResponseStreamManager:
        """A streamed ``create`` as a context manager: ``with client.responses.stream(...) as stream:``."""
        args: dict[str, object] = {"model": model, "input": input, **params}
        _spec(self.format, dict(args), True, text_format)  # checked now, before any request
        return ResponseStreamManager(lambda: self._run(args, True, text_format), text_format)

    def run_tools(self, *, model: str, input: object = None, tools: Sequence[ToolInput], max_turns: int = 10,
                  tool_timeout: float | None = 60.0, **params: object) -> ResponseToolRunResult:
        """``chat.completions.run_tools`` on the Responses API: ask the model, run the functions it calls, send
        each result back as a ``function_call_output`` input item (after the reply's own output items), until it
        answers without a function call. Same ``tools``, ``max_turns``, ``tool_timeout`` and errors; other
        arguments are ``create()``'s. Returns a `ResponseToolRunResult` (``response``, ``output_text``, the
        ``input`` conversation, ``tool_calls``, ``usage`` and ``cost`` over every request). Bridged to chat
        completions like ``create`` where the server has no ``/responses``. See docs/tools.md."""
        loop = plan_tools({"model": model, "input": input, **params}, tools, max_turns, tool_timeout,
                          self.format.tool_turns())
        result: ResponseToolRunResult = run_tools(self._client, loop, lambda step: self._run(step, False))
        return result

    def batch(self, requests: Iterable[object],
              **params: object) -> BatchResults[Response, ResponseToolRunResult]:
        """Run many Responses API requests through the batch engine (prompt strings, lists of input items, dicts
        of ``create()`` arguments, or OpenAI Batch lines with ``"url": "/v1/responses"``); options as for
        ``chat.completions.batch``. Each result's ``response`` is a `Response` (``tool_run``: a
        `ResponseToolRunResult`), and so typed."""
        return self._formatted.batch(requests, **params)


class AsyncResponses(_Bridging):
    """``client.responses`` on the async client (every method is a coroutine function)."""

    def __init__(self, client: _AsyncClient) -> None:
        super().__init__(client)
        self.format = AutoResponsesWire(str(client.config.base_url))
        self._formatted = AsyncWireResource(client, self.format)

    async def _run(self, params: dict[str, object], stream: bool, text_format: object = None) -> Any:
        spec = _spec(self.format, params, stream, text_format)
        try:
            return await self._client._execute(spec)
        except NotFoundError as exc:
            if not self.format.learn(exc, spec):
                raise
        return await self._client._execute(_spec(self.format, params, stream, text_format))  # bridged

    @overload
    async def create(self, *, model: str, input: object = None, stream: Literal[False] = False,
                     **params: object) -> Response: ...

    @overload
    async def create(self, *, model: str, input: object = None, stream: Literal[True],
                     **params: object) -> AsyncStream[ResponseStreamEvent]: ...

    async def create(self, *, model: str, input: object = None, stream: bool = False,
                     **params: object) -> Response | AsyncStream[ResponseStreamEvent]:
        """The async ``responses.create`` (see the sync client's)."""
        result: Response | AsyncStream[ResponseStreamEvent] = await self._run(
            {"model": model, "input": input, **params}, stream)
        return result

    async def parse(self, *, model: str, text_format: type[T], input: object = None,
                    **params: object) -> ParsedResponse[T]:
        """The async ``responses.parse``."""
        result: ParsedResponse[T] = await self._run({"model": model, "input": input, **params}, False, text_format)
        return result

    def stream(self, *, model: str, input: object = None, text_format: object = None,
               **params: object) -> AsyncResponseStreamManager:
        """``async with client.responses.stream(...) as stream:`` (the request is sent on entry)."""
        args: dict[str, object] = {"model": model, "input": input, **params}
        _spec(self.format, dict(args), True, text_format)  # checked now, before any request
        return AsyncResponseStreamManager(lambda: self._run(args, True, text_format), text_format)

    async def run_tools(self, *, model: str, input: object = None, tools: Sequence[ToolInput], max_turns: int = 10,
                        tool_timeout: float | None = 60.0, **params: object) -> ResponseToolRunResult:
        """The async ``responses.run_tools`` (plain functions in the SDK's tool threads, async ones on this loop)."""
        loop = plan_tools({"model": model, "input": input, **params}, tools, max_turns, tool_timeout,
                          self.format.tool_turns())
        result: ResponseToolRunResult = await arun_tools(self._client, loop, lambda step: self._run(step, False))
        return result

    async def batch(self, requests: Iterable[object] | AsyncIterable[object],
                    **params: object) -> BatchResults[Response, ResponseToolRunResult]:
        """The async ``responses.batch``."""
        return await self._formatted.batch(requests, **params)

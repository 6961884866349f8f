"""``client.chat.completions``: one resource class typed for both the sync and async clients."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, overload

from typing_extensions import Unpack

from holysheep._core.request import ChatParams, build_chat_spec
from holysheep._core.wire.chat import parse_chat_completion
from holysheep.types.chat import ChatCompletionMessageParam, Message, ModelName

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec

__all__ = ["BaseChat", "BaseCompletions", "Beta", "Executor", "Resource", "coroutine_method", "parse_chat_completion"]

_T = TypeVar("_T")
_RC = TypeVar("_RC")
_RS = TypeVar("_RS")


class Executor(Protocol):
    """What a resource needs from its client: run a request spec (sync: a value; async: a coroutine)."""

    def _execute(self, spec: RequestSpec) -> Any: ...


def coroutine_method(method: Callable[..., Awaitable[_T]]) -> Callable[..., Coroutine[object, object, _T]]:
    """``method`` (one shared by both clients, which returns a coroutine on the async client) as an ``async def``
    of the same signature, so that ``inspect.iscoroutinefunction`` is true for it (instructor and litellm ask)."""
    import functools

    @functools.wraps(method)
    async def call(*args: object, **kwargs: object) -> _T:
        return await method(*args, **kwargs)

    return call


class Resource:
    """A part of a client (``client.models``, ``client.chat.completions``, ...) that sends through it."""

    def __init__(self, client: Executor) -> None:
        self._client = client

    @property
    def with_raw_response(self) -> Any:
        """The same methods, returning an `APIResponse`: ``headers``, ``status_code``, ``http_request``,
        ``elapsed``, ``retries_taken`` and ``parse()`` (openai-python's ``with_raw_response``)."""
        from holysheep._clients.resources.raw import RawResponseProxy

        return RawResponseProxy(self)

    @property
    def with_streaming_response(self) -> Any:
        """The same methods as context managers giving the `APIResponse` (a stream is closed on exit)."""
        from holysheep._clients.resources.raw import StreamingResponseProxy

        return StreamingResponseProxy(self)


class BaseCompletions(Resource, Generic[_RC, _RS]):
    """Chat completions. ``_RC``/``_RS`` are what ``create`` returns without/with ``stream=True``."""

    @overload
    def create(
        self,
        *,
        model: ModelName,
        messages: Iterable[ChatCompletionMessageParam | Message],
        stream: Literal[False] = False,
        **params: Unpack[ChatParams],
    ) -> _RC: ...

    @overload
    def create(
        self,
        *,
        model: ModelName,
        messages: Iterable[ChatCompletionMessageParam | Message],
        stream: Literal[True],
        **params: Unpack[ChatParams],
    ) -> _RS: ...

    @overload
    def create(
        self,
        *,
        model: ModelName,
        messages: Iterable[ChatCompletionMessageParam | Message],
        stream: bool,
        **params: Unpack[ChatParams],
    ) -> _RC | _RS: ...

    def create(
        self,
        *,
        model: ModelName,
        messages: Iterable[ChatCompletionMessageParam | Message],
        stream: bool = False,
        **params: Unpack[ChatParams],
    ) -> _RC | _RS:
        """Create a chat completion.

        Takes OpenAI's chat parameters (``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``n``,
        ``seed``, ``tools``, ``tool_choice``, ``response_format``, ``user``, ...), plus ``extra_body``,
        ``extra_headers``, and per-call ``timeout``/``max_retries``/``stream_idle_timeout``.
        Arguments are checked before any I/O (``InvalidRequestError``). With ``stream=True`` returns a
        stream of `ChatCompletionChunk`; otherwise a
        `ChatCompletion`.
        """
        spec = build_chat_spec(model=model, messages=messages, stream=stream, params=params,
                               parse=parse_chat_completion)
        result: _RC | _RS = self._client._execute(spec)
        return result


_C = TypeVar("_C", bound=BaseCompletions[Any, Any])


class BaseChat(Generic[_C]):
    """``client.chat``: holds ``completions``."""

    def __init__(self, completions: _C) -> None:
        self.completions = completions


_CH = TypeVar("_CH")


class Beta(Generic[_CH]):
    """``client.beta``: where older openai code calls ``client.beta.chat.completions.parse`` (and ``.stream``).
    ``client.beta.chat`` is ``client.chat``."""

    def __init__(self, chat: _CH) -> None:
        self.chat = chat

"""Request specifications: what to send, built from user arguments without touching the network."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel
from typing_extensions import TypedDict

from holysheep._core.config import TimeoutTypes, check_headers
from holysheep._core.sentinels import given, is_not_given
from holysheep._core.validation import normalize_messages, validate_sampling

__all__ = ["NO_OPTIONS", "ChatParams", "ChatParamsBase", "ChatParamsNoFormat", "ParseParams", "RequestOptions",
           "RequestSpec", "ResponseFormatInput", "RunToolsParams", "ToolInput", "build_chat_spec", "request_options"]

_NOT_GIVEN: Any = object()


ToolInput = Union[Mapping[str, Any], Callable[..., Any], type[BaseModel]]
"""One ``tools=[...]`` entry where typed tools are accepted (``parse``, ``run_tools``, ``batch``, and ``stream``
with ``response_format=Model``): a tool dict (a `FunctionTool` is one), a plain or async function (wrapped
with ``function_tool``) or a pydantic model class (wrapped with ``pydantic_function_tool``). They take a
list or a tuple of them (typed ``Sequence``: a generator would be read up before the batch's requests)."""

ResponseFormatInput = Union[Mapping[str, Any], type[Any]]
"""``response_format`` as ``create()`` and ``run_tools()`` take it at run time: a mapping (a ``json_schema`` /
``json_object`` envelope, or a read-only mapping) sent as given, as JSON, or a pydantic model or another type
pydantic understands (``list[Model]``, a ``TypedDict`` class), sent as the strict ``json_schema`` envelope
(``parse()`` validates the reply; ``create()`` does not). ``Literal[...]`` and ``X | Y`` work too, but a type
checker does not see them as types: wrap them in a model or a ``list[...]``. (`BatchResponseFormat` is the same.)"""


class ChatParamsBase(TypedDict, total=False):
    """The chat parameters every ``chat.completions`` method takes, but ``tools`` and ``response_format``
    (whose accepted types differ per method: see `ChatParams`, `ChatParamsNoFormat`, `ParseParams`,
    `RunToolsParams`)."""

    temperature: float
    top_p: float
    max_tokens: int
    max_completion_tokens: int
    stop: str | list[str]
    n: int
    seed: int
    presence_penalty: float
    frequency_penalty: float
    logit_bias: Mapping[str, int]
    logprobs: bool
    top_logprobs: int
    tool_choice: str | Mapping[str, Any]
    parallel_tool_calls: bool
    functions: list[dict[str, Any]]
    """Deprecated by OpenAI in favour of ``tools``; sent as given."""
    function_call: str | dict[str, Any]
    """Deprecated by OpenAI in favour of ``tool_choice``; sent as given."""
    stream_options: Mapping[str, Any]
    user: str
    safety_identifier: str
    metadata: dict[str, str]
    reasoning_effort: str
    verbosity: str
    service_tier: str
    store: bool
    modalities: Sequence[str]
    audio: dict[str, Any]
    prediction: dict[str, Any]
    moderation: dict[str, Any]
    prompt_cache_key: str
    prompt_cache_options: dict[str, Any]
    prompt_cache_retention: str
    web_search_options: dict[str, Any]
    extra_query: Mapping[str, Any]
    """Query parameters added to the URL (openai's ``extra_query``)."""
    # Per-call transport options (not sent in the body)
    extra_body: Mapping[str, object]
    extra_headers: Mapping[str, str | None]
    timeout: TimeoutTypes
    max_retries: int
    stream_idle_timeout: float | None


class ChatParamsNoFormat(ChatParamsBase, total=False):
    """``ChatParams`` without ``response_format``: what ``chat.completions.stream`` takes besides a dict (or
    no) ``response_format``. ``tools`` are dicts only here: they are sent as given."""

    tools: Sequence[Mapping[str, Any]]


class ChatParams(ChatParamsNoFormat, total=False):
    """Optional keyword arguments of ``chat.completions.create`` (OpenAI's chat parameters)."""

    response_format: ResponseFormatInput


class ParseParams(ChatParamsBase, total=False):
    """What ``parse`` (and ``stream`` with ``response_format=Model``) take besides ``response_format``:
    ``tools`` may also be functions and pydantic models (made strict tools, their arguments parsed)."""

    tools: Sequence[ToolInput]


class RunToolsParams(ChatParamsBase, total=False):
    """What ``run_tools`` takes besides ``model``, ``messages``, ``tools`` and ``max_turns``."""

    response_format: ResponseFormatInput


_TRANSPORT_KEYS = ("extra_body", "extra_headers", "extra_query", "timeout", "max_retries", "stream_idle_timeout")
_KNOWN_KEYS = frozenset(ChatParams.__annotations__)
CHAT_PARAM_NAMES = _KNOWN_KEYS
"""The optional keyword arguments ``create()`` accepts (the batch checks its defaults against them)."""


def _check_known(params: Mapping[str, object]) -> None:
    for key in params:
        if key not in _KNOWN_KEYS:
            import difflib

            from holysheep._exceptions import InvalidRequestError

            close = difflib.get_close_matches(str(key).lower(), sorted(_KNOWN_KEYS), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InvalidRequestError(
                f"create() got an unknown parameter {key!r}.{hint} Send server-specific fields through "
                f"extra_body={{{key!r}: ...}}.", field=str(key), reason="unknown parameter")


@dataclass(slots=True, eq=False)
class RequestOptions:
    """Per-call overrides of the client's transport settings (unset fields inherit).

    Never changed once built (not ``frozen``: a frozen dataclass costs three times as much to build, and
    one is built for every request)."""

    extra_headers: Mapping[str, str | None] | None = None
    extra_query: Mapping[str, Any] | None = None
    timeout: Any = _NOT_GIVEN
    max_retries: int | None = None
    stream_idle_timeout: Any = _NOT_GIVEN

    @property
    def has_timeout(self) -> bool:
        return self.timeout is not _NOT_GIVEN

    @property
    def has_idle_timeout(self) -> bool:
        return self.stream_idle_timeout is not _NOT_GIVEN


NO_OPTIONS = RequestOptions()
"""The options of a call that overrides nothing (shared: calls with it use the client's settings as they are)."""


@dataclass(slots=True)
class RequestSpec:
    """One API call: method, path under the base URL, JSON body, how to parse the reply.

    Never changed once built (``dataclasses.replace`` makes a changed copy)."""

    method: str
    path: str
    body: Mapping[str, Any] | None
    parse: Callable[[bytes], object]
    stream: bool = False
    options: RequestOptions = NO_OPTIONS
    raw: str = ""
    """``"raw"`` (``with_raw_response``): the reply comes back as an `APIResponse` (parsed on ``.parse()``);
    ``"stream"`` (``with_streaming_response``): a 2xx body is handed over unread; ``""``: the parsed reply."""
    defaulted: frozenset[str] = frozenset()
    """Body keys the SDK filled in itself (the caller did not set them): hooks report them as not set."""
    wire: object = None
    """The `WireFormat` that built it (``holysheep._core.wire.wire_of`` reads it); None: the one of its path."""

    @property
    def model(self) -> str | None:
        """The model the body asks for, if any (fallbacks map it)."""
        model = self.body.get("model") if self.body else None
        return model if isinstance(model, str) else None


def _response_format(value: object) -> object:
    if not isinstance(value, Mapping):  # a pydantic model or another type: the strict json_schema envelope
        from holysheep._core.schema import response_format_for  # loads only when a type is passed

        return response_format_for(value).param
    return value if isinstance(value, dict) else dict(value)  # a read-only mapping is sent as JSON too


def build_chat_spec(
    *,
    model: str,
    messages: Iterable[object],
    stream: bool,
    params: Mapping[str, Any],
    parse: Callable[[bytes], object],
) -> RequestSpec:
    """Validate chat arguments and build the request (raises InvalidRequestError before any I/O). Arguments
    passed as ``NOT_GIVEN``/``omit`` (holysheep's or openai's) count as not passed."""
    params = given(params)
    if not isinstance(stream, bool):
        if is_not_given(stream):
            return build_chat_spec(model=model, messages=messages, stream=False, params=params, parse=parse)
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError(f"stream must be True or False, got {stream!r}.", field="stream")
    _check_known(params)
    validate_sampling(model, params)
    if params.get("extra_headers") is not None:
        check_headers("extra_headers", params["extra_headers"])
    body: dict[str, Any] = {"model": model, "messages": normalize_messages(messages)}
    overrides = False  # any per-call transport option (else the shared NO_OPTIONS)
    for key, value in params.items():
        if key in _TRANSPORT_KEYS:
            overrides = True
            continue
        if value is None:
            continue
        body[key] = _response_format(value) if key == "response_format" else value
    if stream:
        body["stream"] = True
    extra_body = params.get("extra_body")
    if extra_body:
        body.update(extra_body)
    options = request_options(params) if overrides else NO_OPTIONS
    return RequestSpec("POST", "chat/completions", body, parse, stream, options)


def request_options(params: Mapping[str, Any]) -> RequestOptions:
    """The per-call transport options in ``params`` (``extra_headers``, ``extra_query``, ``timeout``,
    ``max_retries``, ``stream_idle_timeout``); `NO_OPTIONS` when none is given. Headers are checked here."""
    params = given(params)
    if not any(params.get(key, _NOT_GIVEN) is not _NOT_GIVEN for key in _TRANSPORT_KEYS if key != "extra_body"):
        return NO_OPTIONS
    if params.get("extra_headers") is not None:
        check_headers("extra_headers", params["extra_headers"])
    return RequestOptions(
        extra_headers=params.get("extra_headers"),
        extra_query=params.get("extra_query"),
        timeout=params.get("timeout", _NOT_GIVEN),
        max_retries=params.get("max_retries"),
        stream_idle_timeout=params.get("stream_idle_timeout", _NOT_GIVEN),
    )


def _cast_parser(cast_to: Any) -> Callable[[bytes], object]:
    if cast_to is None or cast_to is dict or cast_to is Any or cast_to is object:
        from holysheep._core.json_check import load_json

        return load_json
    if isinstance(cast_to, type) and issubclass(cast_to, BaseModel):
        return cast_to.model_validate_json
    from pydantic import TypeAdapter

    return TypeAdapter(cast_to).validate_json


def generic_spec(method: str, path: object, *, body: object = None, cast_to: object = None,
                 params: Mapping[str, object] | None = None) -> RequestSpec:
    """A request to any other endpoint of the server (``client.post``/``client.get``): ``path`` under the base
    URL, a JSON ``body``, the reply parsed as ``cast_to`` (a pydantic model or any type pydantic validates;
    default: the decoded JSON). Raises `InvalidRequestError` before any I/O."""
    from holysheep._exceptions import InvalidRequestError

    if not isinstance(path, str) or not path.strip("/") or "://" in path or path.startswith("//"):
        raise InvalidRequestError(f"path must be a path under the base URL such as '/rerank', got {path!r}: the key "
                                  "is only sent to the client's own server.", field="path")
    if body is not None and not isinstance(body, Mapping):
        raise InvalidRequestError(f"body must be a dict (sent as JSON), got {type(body).__name__}.", field="body")
    if method == "GET" and body is not None:
        raise InvalidRequestError("get() sends no body; pass query parameters as extra_query={...}.", field="body")
    options = request_options(params or {})
    from holysheep._core.raw_response import wants_response

    if wants_response(cast_to):  # cast_to=httpx.Response (or httpx2's): the response itself, as openai-python
        return RequestSpec(method, path.lstrip("/"), body, _cast_parser(None), options=options, raw="raw")
    return RequestSpec(method, path.lstrip("/"), body, _cast_parser(cast_to), options=options)

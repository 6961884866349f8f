"""Request specifications: what to send, built from user arguments without touching the network."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from holysheep._core.config import TimeoutTypes, check_headers
from holysheep._core.validation import normalize_messages, validate_sampling

__all__ = ["NO_OPTIONS", "ChatParams", "ChatParamsNoFormat", "RequestOptions", "RequestSpec", "build_chat_spec"]

_NOT_GIVEN: Any = object()


class ChatParamsNoFormat(TypedDict, total=False):
    """``ChatParams`` without ``response_format`` (``chat.completions.parse`` takes it as its own argument)."""

    temperature: float
    top_p: float
    max_tokens: int
    max_completion_tokens: int
    stop: str | list[str]
    n: int
    seed: int
    presence_penalty: float
    frequency_penalty: float
    logit_bias: dict[str, int]
    logprobs: bool
    top_logprobs: int
    tools: list[dict[str, Any]]
    tool_choice: str | dict[str, Any]
    parallel_tool_calls: bool
    stream_options: dict[str, Any]
    user: str
    metadata: dict[str, str]
    reasoning_effort: str
    service_tier: str
    store: bool
    modalities: list[str]
    prediction: dict[str, Any]
    # Per-call transport options (not sent in the body)
    extra_body: Mapping[str, Any]
    extra_headers: Mapping[str, str | None]
    timeout: TimeoutTypes
    max_retries: int
    stream_idle_timeout: float | None


class ChatParams(ChatParamsNoFormat, total=False):
    """Optional keyword arguments of ``chat.completions.create`` (OpenAI's chat parameters)."""

    response_format: dict[str, Any] | type[BaseModel]


_TRANSPORT_KEYS = ("extra_body", "extra_headers", "timeout", "max_retries", "stream_idle_timeout")
_KNOWN_KEYS = frozenset(ChatParams.__annotations__)
CHAT_PARAM_NAMES = _KNOWN_KEYS
"""The optional keyword arguments ``create()`` accepts (the batch checks its defaults against them)."""


def _check_known(params: Mapping[str, Any]) -> None:
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
    parse: Callable[[bytes], Any]
    stream: bool = False
    options: RequestOptions = NO_OPTIONS

    @property
    def model(self) -> str | None:
        """The model the body asks for, if any (fallbacks map it)."""
        model = self.body.get("model") if self.body else None
        return model if isinstance(model, str) else None


def _response_format(value: Any) -> Any:
    if not isinstance(value, Mapping):  # a pydantic model or another type: the strict json_schema envelope
        from holysheep._core.schema import response_format_for  # loads only when a type is passed

        return response_format_for(value).param
    return value


def build_chat_spec(
    *,
    model: str,
    messages: Iterable[Any],
    stream: bool,
    params: Mapping[str, Any],
    parse: Callable[[bytes], Any],
) -> RequestSpec:
    """Validate chat arguments and build the request (raises InvalidRequestError before any I/O)."""
    if not isinstance(stream, bool):
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
    options = NO_OPTIONS
    if overrides:
        options = RequestOptions(
            extra_headers=params.get("extra_headers"),
            timeout=params.get("timeout", _NOT_GIVEN),
            max_retries=params.get("max_retries"),
            stream_idle_timeout=params.get("stream_idle_timeout", _NOT_GIVEN),
        )
    return RequestSpec("POST", "chat/completions", body, parse, stream, options)

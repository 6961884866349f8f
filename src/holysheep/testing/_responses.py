"""The fake server's HTTP exchanges: the `Response` and `StreamReply` a handler or endpoint returns, the
`RecordedRequest` it gets, and the pure endpoint answers (chat completions, a model, errors) that the fake
server and the respx mock share. Stdlib only; the payloads come from `._replies`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from ._replies import (
    ReplySpec,
    chat_completion,
    chat_usage,
    dumps,
    error_body,
    model_object,
    resolve_reply,
    split_pieces,
    stream_events,
)

if TYPE_CHECKING:
    from ._fault import Fault

__all__ = [
    "Handler",
    "RecordedRequest",
    "Response",
    "StreamReply",
    "chat_endpoint",
    "error_response",
    "model_endpoint",
    "unknown_model",
]

@dataclass
class Response:
    """An HTTP response, as a custom handler may return it. ``body`` is sent as JSON unless it is
    ``bytes`` or ``str``; ``cut=True`` sends the head and half the body, then closes the connection."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    cut: bool = False

    def encode(self) -> tuple[bytes, str]:
        """The body bytes and the content type."""
        if isinstance(self.body, bytes):
            return self.body, self.content_type or "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), self.content_type or "text/plain; charset=utf-8"
        return dumps(self.body), self.content_type or "application/json"


@dataclass
class StreamReply:
    """An SSE response: complete ``data: ...\\n\\n`` events. ``content_events`` events from index
    ``first_content`` carry the content; each after the first is preceded by the stream delay (`paced`).
    ``cut=True`` closes the connection without ending the body."""

    events: list[bytes]
    content_events: int = 0
    cut: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    first_content: int = 1

    @property
    def paced(self) -> range:
        """The indexes of the events the stream delay precedes."""
        return range(self.first_content + 1, self.first_content + self.content_events)


@dataclass
class RecordedRequest:
    """One request as the server saw it. Times are ``time.monotonic()``; ``status`` is ``None`` when no
    response head was sent (reset, stall); ``fault`` is the fault injected into it, if any."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    started_at: float
    finished_at: float | None = None
    fault: Fault | None = None
    status: int | None = None
    request_id: str = ""
    query: str = ""


Handler = Callable[[RecordedRequest], Union[Response, StreamReply, Mapping[str, Any], None]]
"""A custom route: gets the recorded request; returns a Response or StreamReply, a dict (200 JSON), or None
(the built-in answer)."""


def error_response(
    status: int, message: str, type_: str, code: str | None = None, param: str | None = None
) -> Response:
    """A JSON error response with an OpenAI error body."""
    return Response(status, error_body(message, type_, code, param))


def chat_endpoint(
    body: object,
    reply_spec: ReplySpec,
    *,
    models: Mapping[str, str],
    strict_models: bool = False,
    words_per_chunk: int = 1,
    quota_exhausted: bool = False,
) -> tuple[Response | StreamReply, int]:
    """Answer ``POST /chat/completions``: the response and the tokens it used (0 on error)."""
    if not isinstance(body, dict):
        return error_response(
            400, "We could not parse the JSON body of your request.", "invalid_request_error"
        ), 0
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error_response(
            400, "You must provide a model parameter.", "invalid_request_error", None, "model"
        ), 0
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        msg = "'messages' must be a non-empty array."
        return error_response(400, msg, "invalid_request_error", None, "messages"), 0
    if strict_models and model not in models:
        return unknown_model(model, models), 0
    if quota_exhausted:
        msg = "You exceeded your current quota, please check your plan and billing details."
        return error_response(429, msg, "insufficient_quota", "insufficient_quota"), 0
    reply = resolve_reply(reply_spec, body)
    tokens = chat_usage(body, reply)["total_tokens"]
    if body.get("stream") is True:
        events = stream_events(body, reply, model, words_per_chunk)
        paced = len(split_pieces(reply.content, words_per_chunk))
        paced += sum(1 + (len(call["arguments"]) + 15) // 16 for call in reply.tool_calls)
        return StreamReply(events, paced), tokens
    return Response(200, chat_completion(body, reply, model)), tokens


def unknown_model(model_id: str, models: Mapping[str, str]) -> Response:
    served = ", ".join(f"`{name}`" for name in models)
    msg = f"The model `{model_id}` does not exist or you do not have access to it. Served models: {served}."
    return error_response(404, msg, "invalid_request_error", "model_not_found", "model")


def model_endpoint(model_id: str, models: Mapping[str, str]) -> Response:
    """Answer ``GET /models/{id}``."""
    return (
        Response(200, model_object(model_id, models[model_id]))
        if model_id in models
        else unknown_model(model_id, models)
    )

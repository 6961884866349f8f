"""The Responses API over chat completions, for servers without ``/responses`` (sans-I/O).

`to_chat` turns ``responses.create`` arguments into ``chat.completions.create`` ones (``instructions`` -> a system
message, input items -> messages, function tools and calls both ways, ``text.format`` -> ``response_format``,
``max_output_tokens`` -> ``max_tokens``); what cannot be bridged (stored state, built-in tools) raises
`ResponsesBridgeError` naming it. `to_response` turns the completion into a `Response` (text, refusal, function
calls, status, usage). `BRIDGED` is the wire format of such a request: its body is chat's, its reply a `Response`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel

from holysheep._core.wire.chat import ChatWire, parse_chat_completion
from holysheep._core.wire.responses import ResponsesWire
from holysheep._exceptions import InvalidRequestError, ResponsesBridgeError
from holysheep.types.chat import ChatCompletion
from holysheep.types.responses import Response

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec
    from holysheep._core.stream_state import StreamState

__all__ = ["BRIDGED", "BridgedResponsesWire", "to_chat", "to_response"]

_STATEFUL = ("previous_response_id", "conversation", "prompt", "background")
_SAME = ("model", "temperature", "top_p", "user", "metadata", "parallel_tool_calls", "service_tier", "store",
         "safety_identifier", "prompt_cache_key", "top_logprobs", "extra_body", "extra_headers", "extra_query",
         "timeout", "max_retries", "stream_idle_timeout")
_DROPPED = ("include", "truncation", "max_tool_calls", "prompt_cache_retention", "context_management",
            "stream_options", "stream")


def _refuse(field: str, what: str) -> ResponsesBridgeError:
    return ResponsesBridgeError(
        f"{field}: {what} cannot be bridged to chat completions, which this server serves instead of /responses "
        "(it keeps no stored responses and runs no built-in tools). Send the whole conversation as input items "
        "and use function tools, or use a server that serves /v1/responses.", field=field,
        reason="not bridgeable")


def _content(content: object) -> object:
    """Responses input content -> chat content: a string as it is; ``input_text`` / ``output_text`` parts ->
    ``text`` parts, ``input_image`` -> ``image_url``."""
    if not isinstance(content, list):
        return content
    parts: list[dict[str, object]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part, Mapping):
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image" and isinstance(part, Mapping):
            url = part.get("image_url")
            parts.append({"type": "image_url", "image_url": {"url": url, "detail": part.get("detail", "auto")}})
        else:
            raise _refuse("input", f"a content part of type {kind!r}")
    if all(p["type"] == "text" for p in parts):
        return "".join(str(p["text"]) for p in parts)
    return parts


def _messages(params: Mapping[str, object]) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = []
    instructions = params.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    value = params.get("input")
    if isinstance(value, str):
        return [*messages, {"role": "user", "content": value}]
    for item in value if isinstance(value, (list, tuple)) else ():
        item = item.model_dump(exclude_none=True) if isinstance(item, BaseModel) else item
        if not isinstance(item, Mapping):
            raise InvalidRequestError(f"input: an item must be a dict, got {type(item).__name__}.", field="input")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            messages.append({"role": "system" if role == "developer" else role,
                             "content": _content(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments", "")}}
            last = messages[-1] if messages else None
            calls = last.get("tool_calls") if last is not None and last.get("role") == "assistant" else None
            if isinstance(calls, list):  # parallel calls: one assistant message
                calls.append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, str) else json.dumps(output)})
        elif kind == "reasoning":
            continue  # a reasoning item of an earlier reply: chat takes none back
        else:
            raise _refuse("input", f"an input item of type {kind!r}")
    return messages


def _tools(tools: object) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for tool in tools if isinstance(tools, (list, tuple)) else ():
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind != "function" or not isinstance(tool, Mapping):
            raise _refuse("tools", f"the built-in tool {kind!r}")
        function: dict[str, object] = {k: tool[k] for k in ("name", "description", "parameters", "strict")
                                       if tool.get(k) is not None}
        out.append({"type": "function", "function": function})
    return out


def to_chat(params: Mapping[str, object]) -> dict[str, object]:
    """``chat.completions.create`` arguments for ``responses.create`` ones (raises `ResponsesBridgeError`)."""
    for field in _STATEFUL:
        if params.get(field):
            raise _refuse(field, f"{field}={params[field]!r} (stored state on the server)")
    chat: dict[str, object] = {k: params[k] for k in _SAME if params.get(k) is not None}
    chat["messages"] = _messages(params)
    if params.get("tools"):
        chat["tools"] = _tools(params["tools"])
    choice = params.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif isinstance(choice, str):
        chat["tool_choice"] = choice
    elif choice is not None:
        raise _refuse("tool_choice", f"tool_choice={choice!r}")
    text = params.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": {
            k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}}
    elif isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    reasoning = params.get("reasoning")
    if isinstance(reasoning, Mapping) and reasoning.get("effort"):
        chat["reasoning_effort"] = reasoning["effort"]
    if params.get("max_output_tokens") is not None:
        chat["max_tokens"] = params["max_output_tokens"]
    unknown = sorted(k for k in params if k not in chat and k not in _SAME and k not in _DROPPED
                     and k not in ("input", "instructions", "tools", "tool_choice", "text", "reasoning",
                                   "max_output_tokens") and params.get(k) is not None)
    if unknown:
        raise _refuse(unknown[0], f"{unknown[0]}=")
    return chat


def to_response(completion: ChatCompletion) -> Response:
    """The `Response` a chat completion's first choice makes: its text (or refusal) as an output message, its
    tool calls as ``function_call`` items, ``finish_reason`` as the status, the usage renamed."""
    choice = completion.choices[0] if completion.choices else None
    output: list[dict[str, object]] = []
    if choice is not None:
        message = choice.message
        if message.refusal:
            output.append({"id": f"msg_{completion.id}", "type": "message", "role": "assistant",
                           "status": "completed", "content": [{"type": "refusal", "refusal": message.refusal}]})
        elif message.content is not None and (message.content or not message.tool_calls):  # not an empty text
            output.append({"id": f"msg_{completion.id}", "type": "message", "role": "assistant",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": message.content, "annotations": []}]})
        for call in message.tool_calls or ():
            function = call.function
            output.append({"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id,
                           "name": function.name if function else "", "status": "completed",
                           "arguments": function.arguments if function else ""})
    reason = choice.finish_reason if choice is not None else None
    incomplete = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(reason or "")
    usage = completion.usage
    body: dict[str, object] = {
        "id": completion.id, "object": "response", "created_at": completion.created, "model": completion.model,
        "status": "incomplete" if incomplete else "completed", "output": output,
        "incomplete_details": {"reason": incomplete} if incomplete else None}
    if usage is not None:
        cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details is not None else 0
        reasoning = (usage.completion_tokens_details.reasoning_tokens
                     if usage.completion_tokens_details is not None else 0)
        body["usage"] = {"input_tokens": usage.prompt_tokens, "input_tokens_details": {"cached_tokens": cached or 0},
                         "output_tokens": usage.completion_tokens,
                         "output_tokens_details": {"reasoning_tokens": reasoning or 0},
                         "total_tokens": usage.total_tokens}
    response = Response.model_validate(body)
    response._set_transport(completion._transport)
    return response


def _parse_bridged(content: bytes) -> Response:
    return to_response(parse_chat_completion(content))


class BridgedResponsesWire(ResponsesWire):
    """A Responses API call sent as a chat completion: chat's body, path and output bound; a `Response` back.
    Not registered (the chat format keeps its path): the requests it builds name it."""

    name: ClassVar[str] = "responses-bridged"
    api_type: ClassVar[str | None] = "chat_completions"  # the API the request went to
    path: ClassVar[str] = "chat/completions"
    output_limit_fields: ClassVar[tuple[str, ...]] = ChatWire.output_limit_fields
    prompt_field: ClassVar[str] = "input"
    not_prompt_fields: ClassVar[frozenset[str]] = ChatWire.not_prompt_fields

    def build(self, params: Mapping[str, object], *, stream: bool,
              parse: Callable[[bytes], object] | None = None) -> RequestSpec:
        """The chat request of ``responses.create(**params)`` (checked as the Responses API's first)."""
        import dataclasses

        from holysheep._core.request import build_chat_spec

        native = super().build(params, stream=stream)  # the same checks as a native call
        chat = to_chat({k: v for k, v in params.items() if v is not None})
        model, messages = chat.pop("model"), chat.pop("messages")
        assert isinstance(model, str) and isinstance(messages, list)
        if stream:
            chat["stream_options"] = {"include_usage": True}  # the usage a Responses stream ends with
        spec = build_chat_spec(model=model, messages=messages, stream=stream, params=chat,
                               parse=_bridged_parser(parse) if parse is not None else _parse_bridged)
        return dataclasses.replace(spec, wire=self, options=native.options)

    def parse(self, content: bytes) -> object:
        return _parse_bridged(content)

    def stream_state(self, started_at: float, *, secret: str | None, max_event_bytes: int,
                     clock: Callable[[], float], max_text_bytes: int) -> StreamState:
        """A chat stream whose chunks come out as Responses API events (`BridgedStreamState`)."""
        from holysheep._core.bridge_stream import BridgedStreamState

        return BridgedStreamState(started_at, to_response, secret=secret, max_event_bytes=max_event_bytes,
                                  clock=clock, max_text_bytes=max_text_bytes)


def _bridged_parser(parse: Callable[[bytes], object]) -> Callable[[bytes], object]:
    """``parse`` (a native reply parser, such as ``responses.parse``'s) over the bridged `Response`'s JSON."""
    return lambda content: parse(_parse_bridged(content).model_dump_json().encode())


BRIDGED = BridgedResponsesWire()
"""The Responses API over chat completions."""


BRIDGE_MODES = ("auto", "always", "never")


class AutoResponsesWire(ResponsesWire):
    """A client's Responses format: native ``/responses``, or the bridge. ``mode``: ``"auto"`` (native until a
    server answers 404 for ``/responses`` itself, not for a model; then the bridge, remembered by this object
    for the client's base URL, so a batch pays at most its requests in flight, not a 404 per item),
    ``"always"`` (the bridge) or ``"never"`` (native; a 404 is the caller's)."""

    def __init__(self, base_url: str, mode: str = "auto") -> None:
        self.base_url = base_url
        self.mode = mode
        self.missing: set[str] = set()
        """Base URLs that answered 404 for ``/responses``."""

    @property
    def bridged(self) -> bool:
        """True when this client's Responses calls go to chat completions now."""
        return self.mode == "always" or (self.mode == "auto" and self.base_url in self.missing)

    def build(self, params: Mapping[str, object], *, stream: bool,
              parse: Callable[[bytes], object] | None = None) -> RequestSpec:
        if self.bridged:
            return BRIDGED.build(params, stream=stream, parse=parse)
        return super().build(params, stream=stream, parse=parse)  # native, naming this object (see `learn`)

    def learn(self, error: BaseException, spec: RequestSpec) -> bool:
        """After ``error`` on ``spec``: True when it was a native request the server has no endpoint for (HTTP
        404 not about a model) and the bridge is now used (the caller sends it again, bridged)."""
        from holysheep._exceptions import NotFoundError

        if self.mode != "auto" or spec.wire is not self or spec.path != self.path \
                or not isinstance(error, NotFoundError):
            return False
        about = f"{error.code or ''} {error.type or ''} {error.param or ''}".lower()
        if "model" in about:
            return False  # the endpoint exists: the model does not
        self.missing.add(self.base_url)
        return True

    def replan(self, error: BaseException, spec: RequestSpec) -> bool:
        return self.learn(error, spec)

"""GenAI semantic-convention names, and the span attributes read from a request or a response."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from holysheep._core.keys import redact
from holysheep._core.wire import CHAT, WireFormat, wire_of_response

__all__ = ["CAPTURE_ENV", "capture_from_env", "input_messages", "output_messages", "request_attributes",
           "response_attributes", "system_instructions"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
PROVIDER = "holysheep"

OPERATION = "gen_ai.operation.name"
API_TYPE = "openai.api.type"  # the OpenAI conventions': on Responses API calls (responses, or chat_completions)
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"
SERVED_BY = "holysheep.served_by"
ATTEMPTS = "holysheep.attempts"
REQUEST_ID = "holysheep.request_id"
INPUT_MESSAGES = "gen_ai.input.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
OUTPUT_MESSAGES = "gen_ai.output.messages"
BODY_READ = "holysheep.response.read"  # with_streaming_response, no stream=True: full / partial / none
BODY_UNPARSED = "holysheep.response.unparsed"  # read in full, no usage from it: over_copy_limit / invalid

# create() parameter -> span attribute (the ones that were set are recorded; never headers, never keys)
_REQUEST_PARAMS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",  # the Responses API's
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "n": "gen_ai.request.choice.count",
    "dimensions": "gen_ai.embeddings.dimension.count",
}
_OTHER_PARAMS = frozenset(("stop", "encoding_format", "response_format"))


OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
_SPAN_MODES = ("span_only", "span_and_event")
"""The official instrumentation's content modes that put content on spans (holysheep emits no GenAI events, so
``event_only`` records none here)."""


def capture_from_env() -> bool:
    """The ecosystem's switch, as the official openai-v2 instrumentation reads it:
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (also ``1``/``yes``), or, with
    ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, one of its content modes that records on spans
    (``span_only``, ``span_and_event``, any case)."""
    value = os.environ.get(CAPTURE_ENV, "").strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value not in _SPAN_MODES:
        return False
    opt_in = os.environ.get(OPT_IN_ENV, "")
    return "gen_ai_latest_experimental" in (part.strip() for part in opt_in.split(","))


def request_attributes(attrs: dict[str, object], body: Mapping[str, object] | None,
                       defaulted: frozenset[str] = frozenset()) -> None:
    """Add the request parameters the caller set (numbers, stop sequences, formats); ``defaulted``: body keys
    the SDK filled in itself, left out."""
    if not body:
        return
    other = False
    for key, value in body.items():  # a body holds a few keys: one pass over them, not a lookup per parameter
        if defaulted and key in defaulted:
            continue
        name = _REQUEST_PARAMS.get(key)
        if name is not None:
            if value is not None and not isinstance(value, bool) and isinstance(value, (int, float)):
                attrs[name] = value
        elif key in _OTHER_PARAMS:
            other = True
    if not other:
        return
    stop = body.get("stop")
    if isinstance(stop, str):
        attrs["gen_ai.request.stop_sequences"] = (stop,)
    elif isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
        attrs["gen_ai.request.stop_sequences"] = tuple(stop)
    fmt = body.get("encoding_format")
    if isinstance(fmt, str) and "encoding_format" not in defaulted:
        attrs["gen_ai.request.encoding_formats"] = (fmt,)
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and isinstance(response_format.get("type"), str):
        kind = response_format["type"]
        attrs["gen_ai.output.type"] = "json" if kind in ("json_schema", "json_object") else kind


def response_attributes(attrs: dict[str, object], response: object,
                        wire: WireFormat | None = None) -> tuple[int | None, int | None, int, str | None]:
    """Add ``gen_ai.response.*`` and ``gen_ai.usage.*`` from a reply (its wire format reads it: a completion,
    embeddings, a Responses API response) to ``attrs``; returns (input tokens, output tokens, cached input
    tokens, response model)."""
    wire = wire or wire_of_response(response) or CHAT
    rid = getattr(response, "id", None)
    if isinstance(rid, str) and rid:
        attrs[RESPONSE_ID] = rid
    model: str | None = wire.model_of(response)
    if model:
        attrs[RESPONSE_MODEL] = model
    else:
        model = None
    reasons = tuple(str(r) for r in wire.finish_reasons(response) if r is not None)
    if reasons:
        attrs[FINISH_REASONS] = reasons
    inp, out, cached = usage_counts(getattr(response, "usage", None), wire)
    if inp is not None:
        attrs[INPUT_TOKENS] = inp
    if out is not None:
        attrs[OUTPUT_TOKENS] = out
    return inp, out, cached, model


def usage_counts(usage: object, wire: WireFormat = CHAT) -> tuple[int | None, int | None, int]:
    """(input, output, cached input) tokens of a usage block in ``wire``'s format (None where absent; no output
    for a format without any, such as embeddings)."""
    tokens = wire.usage_block(usage) if usage is not None else None
    if tokens is None:
        return None, None, 0
    inp, out, cached = tokens.input, tokens.output, tokens.cached
    return (inp if isinstance(inp, int) else None, out if wire.has_output and isinstance(out, int) else None,
            cached if isinstance(cached, int) else 0)


_TEXT_PARTS = ("text", "input_text", "output_text")  # chat's text part, the Responses API's input and output text


def _text_parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": redact(content)}]
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": redact(part["text"])})
            elif isinstance(part, Mapping):
                parts.append({"type": str(part.get("type", "unknown"))})  # images and audio are not copied
        return parts
    return []


def _item_entries(items: list[object]) -> list[dict[str, Any]]:
    """The Responses API's input items as the convention's messages: messages by role, ``function_call`` items as
    ``tool_call`` parts of an assistant message, ``function_call_output`` items as ``tool`` messages."""
    out: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            out.append({"role": str(item.get("role", "user")), "parts": _text_parts(item.get("content"))})
        elif kind == "function_call":
            part = {"type": "tool_call", "id": item.get("call_id"), "name": item.get("name"),
                    "arguments": redact(str(item.get("arguments", "")))}
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and last.get("calls"):
                last["parts"].append(part)
            else:
                out.append({"role": "assistant", "parts": [part], "calls": True})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool", "parts": _text_parts(output if isinstance(output, (str, list)) else
                                                             json.dumps(output))})
    for entry in out:
        entry.pop("calls", None)
    return out


def system_instructions(body: Mapping[str, object] | None) -> str | None:
    """The Responses API's ``instructions`` as the convention's ``gen_ai.system_instructions`` JSON (only with
    content capture on); key-shaped strings are masked."""
    text = body.get("instructions") if body else None
    return json.dumps(_text_parts(text), ensure_ascii=False) if isinstance(text, str) and text else None


def input_messages(body: Mapping[str, object] | None, items: bool = False) -> str | None:
    """The request's messages as the convention's JSON (only with content capture on); key-shaped
    strings are masked. ``items``: a Responses API body, whose ``input`` (text or items) holds them."""
    if items and body:
        value = body.get("input")
        if isinstance(value, str):
            value = [{"role": "user", "content": value}]
        return json.dumps(_item_entries(value), ensure_ascii=False) if isinstance(value, list) else None
    messages = body.get("messages") if body else None
    if not isinstance(messages, list):
        return None
    out = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        entry: dict[str, Any] = {"role": str(message.get("role", "user")), "parts": _text_parts(message.get("content"))}
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                entry["parts"].append({"type": "tool_call", "id": call.get("id"), "name": call["function"].get("name"),
                                       "arguments": redact(str(call["function"].get("arguments", "")))})
        out.append(entry)
    return json.dumps(out, ensure_ascii=False)


def _tool_call_part(call_id: object, name: object, arguments: object) -> dict[str, object]:
    """A ``tool_call`` part: ``arguments`` parsed from JSON when they are JSON (as the official openai-v2
    instrumentation records them), else the string; key-shaped strings masked first."""
    text = redact(arguments) if isinstance(arguments, str) else ""
    value: object = None
    if text:
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": value}


def output_messages(choices: list[tuple[str | None, str | None, object]]) -> str:
    """(text, finish reason, tool calls) per choice as the convention's JSON (only with content capture on): a
    ``text`` part when there is text, then a ``tool_call`` part per call (objects with ``.id`` and
    ``.function.name/.arguments``, or their dict form)."""
    out = []
    for text, reason, calls in choices:
        parts: list[dict[str, object]] = [{"type": "text", "content": redact(text)}] if text else []
        for call in calls if isinstance(calls, (list, tuple)) else ():
            if isinstance(call, Mapping):
                function = call.get("function") or {}
                parts.append(_tool_call_part(call.get("id"), function.get("name"), function.get("arguments")))
            else:
                function = getattr(call, "function", None)
                parts.append(_tool_call_part(getattr(call, "id", None), getattr(function, "name", None),
                                             getattr(function, "arguments", None)))
        out.append({"role": "assistant", "parts": parts, "finish_reason": reason or ""})
    return json.dumps(out, ensure_ascii=False)

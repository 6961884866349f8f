"""FakeServer's minimal ``POST /v1/responses`` (OpenAI's Responses API): text, function calls, refusals,
plain or streamed as ``response.*`` events.

The request is read as the equivalent chat request (`chat_body`): ``instructions`` and ``input`` become
messages, function tools become chat tools, ``text.format`` becomes ``response_format``, so ``"echo"``,
scripts and ``auto_reply`` answer it unchanged. Stdlib only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ._replies import ReplySpec, ScriptedReply, dumps, new_id, reply_text, resolve_reply, split_pieces, usage
from ._responses import Response, StreamReply, error_response, unknown_model

__all__ = ["chat_body", "responses_endpoint"]


def _messages(body: Mapping[str, object]) -> list[dict[str, object]]:
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "message" and isinstance(item.get("role"), str):
            role = "system" if item["role"] == "developer" else item["role"]
            messages.append({"role": role, "content": item.get("content")})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments", "")}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, (str, list)) else dumps(output).decode()})
    return messages


def chat_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat completions request equivalent to a Responses API request."""
    chat: dict[str, object] = {"model": body.get("model"), "messages": _messages(body)}
    tools = [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters") if k in t}}
             for t in body.get("tools") or () if isinstance(t, Mapping) and t.get("type") == "function"]
    if tools:
        chat["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif isinstance(choice, str):
        chat["tool_choice"] = choice
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": {"name": fmt.get("name"),
                                                                          "schema": fmt.get("schema")}}
    elif isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    if isinstance(body.get("max_output_tokens"), int):
        chat["max_tokens"] = body["max_output_tokens"]
    return chat


def _message_item(reply: ScriptedReply, item_id: str, text: str | None = None) -> dict[str, object]:
    if reply.refusal:
        part: dict[str, object] = {"type": "refusal", "refusal": reply.refusal if text is None else text}
    else:
        part = {"type": "output_text", "text": reply.content if text is None else text, "annotations": [],
                "logprobs": []}
    return {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}


def _call_item(call: Mapping[str, str], item_id: str, arguments: str | None = None) -> dict[str, object]:
    return {"id": item_id, "type": "function_call", "status": "completed", "call_id": call["id"],
            "name": call["name"], "arguments": call["arguments"] if arguments is None else arguments}


def responses_endpoint(
    body: object, reply_spec: ReplySpec, *, models: Mapping[str, str], strict_models: bool = False,
    words_per_chunk: int = 1,
) -> tuple[Response | StreamReply, int]:
    """Answer ``POST /responses``: the response and the tokens it used (0 on error)."""
    if not isinstance(body, dict):
        return error_response(400, "We could not parse the JSON body of your request.", "invalid_request_error"), 0
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error_response(400, "You must provide a model parameter.", "invalid_request_error", None, "model"), 0
    chat = chat_body(body)
    if not chat["messages"]:
        msg = "'input' must be a string or a non-empty array of input items."
        return error_response(400, msg, "invalid_request_error", None, "input"), 0
    if strict_models and model not in models:
        return unknown_model(model, models), 0
    reply = resolve_reply(reply_spec, chat)
    counted = usage(chat, reply_text(reply))
    used = {"input_tokens": counted["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": counted["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": counted["total_tokens"]}
    items: list[dict[str, object]] = []
    if reply.refusal or reply.content or not reply.tool_calls:
        items.append(_message_item(reply, new_id("msg_")))
    items.extend(_call_item(call, new_id("fc_")) for call in reply.tool_calls)
    cut = reply.finish_reason == "length"
    created = int(time.time())
    response: dict[str, object] = {
        "id": new_id("resp_"), "object": "response", "created_at": created,
        "status": "incomplete" if cut else "completed", "completed_at": created,
        "error": None, "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "model": model, "output": items, "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"), "metadata": body.get("metadata") or {},
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "truncation": "disabled", "usage": used, "store": False,
    }
    if body.get("stream") is not True:
        return Response(200, response), counted["total_tokens"]
    return _stream(response, reply, words_per_chunk), counted["total_tokens"]


def _stream(response: dict[str, Any], reply: ScriptedReply, words_per_chunk: int) -> StreamReply:
    """The ``response.*`` SSE events of ``response``: created, in_progress, each output item (added, its
    deltas, done), then ``response.completed`` (or ``response.incomplete``)."""
    events: list[bytes] = []

    def emit(kind: str, **fields: object) -> None:
        obj = {"type": kind, "sequence_number": len(events), **fields}
        events.append(f"event: {kind}\n".encode() + b"data: " + dumps(obj) + b"\n\n")

    start = {**response, "status": "in_progress", "output": [], "usage": None, "completed_at": None,
             "incomplete_details": None}
    emit("response.created", response=start)
    emit("response.in_progress", response=start)
    first_content, content = 0, 0
    for index, item in enumerate(response["output"]):
        pending = {**item, "status": "in_progress"}
        if item["type"] == "function_call":
            emit("response.output_item.added", output_index=index, item={**pending, "arguments": ""})
            args = item["arguments"]
            first_content = first_content or len(events)
            for i in range(0, len(args), 16):
                emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                     delta=args[i:i + 16])
                content += 1
            emit("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                 name=item["name"], arguments=args)
        else:
            part = item["content"][0]
            kind, key = ("refusal", "refusal") if part["type"] == "refusal" else ("output_text", "text")
            emit("response.output_item.added", output_index=index, item={**pending, "content": []})
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit("response.content_part.added", **ids, part={**part, key: ""})
            first_content = first_content or len(events)
            extra: dict[str, object] = {"logprobs": []} if kind == "output_text" else {}
            for piece in split_pieces(part[key], words_per_chunk) or [""]:
                emit(f"response.{kind}.delta", **ids, delta=piece, **extra)
                content += 1
            emit(f"response.{kind}.done", **ids, **{key: part[key]}, **extra)
            emit("response.content_part.done", **ids, part=part)
        emit("response.output_item.done", output_index=index, item=item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    emit(final, response=response)
    return StreamReply(events, content, first_content=first_content)

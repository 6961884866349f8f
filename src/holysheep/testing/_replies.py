"""Replies and OpenAI-format payloads: reply specs, chat completions, stream chunks, model lists, quota and
error bodies.

Pure functions over plain dicts (stdlib only), shared by the fake server and the respx mock; the HTTP
responses built from them, and the endpoints, are in `._responses`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import string
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

__all__ = [
    "DEFAULT_MODELS",
    "ReplySpec",
    "ScriptedReply",
    "chat_completion",
    "chat_usage",
    "choice_count",
    "dumps",
    "error_body",
    "model_object",
    "models_list",
    "new_api_key",
    "new_id",
    "quota_object",
    "reply_text",
    "resolve_reply",
    "split_pieces",
    "stream_events",
    "usage",
]

MODEL_CREATED = 1_735_689_600  # 2025-01-01T00:00:00Z, a stable "created" for listed models
DEFAULT_MODELS: dict[str, str] = {
    "deepseek-v3.2": "deepseek",
    "gpt-4.1": "openai",
    "gpt-4.1-mini": "openai",
    "claude-sonnet-4.5": "anthropic",
    "gemini-2.5-flash": "google",
    "qwen3-235b-a22b": "qwen",
}
_KEY_ALPHABET = string.ascii_letters + string.digits
_PIECE = re.compile(r"\s*\S+\s*")
_LOREM = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
]


@dataclass(frozen=True)
class ScriptedReply:
    """A reply with an explicit finish reason (a plain ``str`` reply finishes with ``"stop"``). With
    ``refusal`` the message has ``content: null`` and that ``refusal`` text instead."""

    content: str
    finish_reason: str = "stop"
    refusal: str | None = None
    tool_calls: tuple[Mapping[str, str], ...] = ()
    """Tool calls (``{"id", "name", "arguments"}``, arguments a JSON string); see `tool_reply`."""


ReplySpec = Union[str, ScriptedReply, Callable[[dict[str, Any]], str | ScriptedReply]]
"""``"echo"`` (the last user message; with ``response_format`` ``json_object``, that message if it is a
JSON object, else ``{"echo": message}``), ``"lorem"`` (``max_tokens`` words, 16 by default), any other
string (returned as is), a `ScriptedReply`, or a callable taking the request body."""


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(obj: object) -> bytes:
    """Compact JSON, as the OpenAI API sends it."""
    return _ENCODER.encode(obj).encode()


def new_id(prefix: str) -> str:
    """``prefix`` + 32 hex characters, e.g. ``req_…`` or ``chatcmpl-…``."""
    return prefix + os.urandom(16).hex()


def new_api_key() -> str:
    """A valid-looking test key: ``hs_test_`` + 24 characters from ``[A-Za-z0-9]``."""
    return "hs_test_" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(24))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _max_tokens(body: dict[str, object]) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _wants_json_object(body: Mapping[str, object]) -> bool:
    fmt = body.get("response_format")
    return isinstance(fmt, Mapping) and fmt.get("type") == "json_object"


def _as_json_object(text: str) -> str:
    """``text`` when it is a JSON object, else ``{"echo": text}``: what ``"echo"`` answers in JSON mode."""
    try:
        if isinstance(json.loads(text), dict):
            return text
    except ValueError:
        pass
    return _ENCODER.encode({"echo": text})


def resolve_reply(spec: ReplySpec, body: dict[str, Any]) -> ScriptedReply:
    """Turn a reply spec into the reply for this request; ``max_tokens`` truncates it (``"length"``)."""
    if isinstance(spec, ScriptedReply):
        reply = spec
        if reply.tool_calls:
            return reply  # never truncated: its arguments would stop being JSON
    elif spec == "echo":
        users = [m for m in body.get("messages", ()) if isinstance(m, dict) and m.get("role") == "user"]
        reply = ScriptedReply(_text(users[-1].get("content")) if users else "")
        if _wants_json_object(body):
            return ScriptedReply(_as_json_object(reply.content))
    elif spec == "lorem":
        limit = _max_tokens(body)
        n = 16 if limit is None else limit
        text = " ".join(_LOREM[i % len(_LOREM)] for i in range(n))
        return ScriptedReply(text, "stop" if limit is None else "length")
    elif isinstance(spec, str):
        reply = ScriptedReply(spec)
    else:
        result = spec(body)
        reply = result if isinstance(result, ScriptedReply) else ScriptedReply(str(result))
        if reply.tool_calls:
            return reply
    limit = _max_tokens(body)
    if limit is not None:
        pieces = split_pieces(reply.content)
        if len(pieces) > limit:
            return ScriptedReply("".join(pieces[:limit]).rstrip(), "length")
    return reply


def split_pieces(text: str, words_per_piece: int = 1) -> list[str]:
    """Split ``text`` into pieces of N words, each with the whitespace that follows it.

    Joining the pieces gives back ``text`` exactly; ``len(split_pieces(t))`` is ``len(t.split())``.
    """
    pieces = _PIECE.findall(text)
    if words_per_piece > 1:
        pieces = ["".join(pieces[i : i + words_per_piece]) for i in range(0, len(pieces), words_per_piece)]
    return pieces


def usage(body: dict[str, Any], reply: str) -> dict[str, int]:
    """``prompt_tokens`` = ceil(characters of all message text / 4); ``completion_tokens`` = words."""
    chars = sum(len(_text(m.get("content"))) for m in body.get("messages", ()) if isinstance(m, dict))
    prompt = (chars + 3) // 4
    completion = len(reply.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def reply_text(reply: ScriptedReply) -> str:
    """The text a reply's completion tokens are counted from: content, then each call's arguments."""
    return " ".join([reply.content, *(call["arguments"] for call in reply.tool_calls)])


def _wire_call(call: Mapping[str, str], index: int | None = None) -> dict[str, object]:
    out: dict[str, object] = {"id": call["id"], "type": "function",
                           "function": {"name": call["name"], "arguments": call["arguments"]}}
    return out if index is None else {"index": index, **out}


def choice_count(body: Mapping[str, object]) -> int:
    """The request's ``n`` (how many choices to answer, 1 to 128); 1 when absent or not a positive int."""
    n = body.get("n")
    return min(n, 128) if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1


def chat_usage(body: dict[str, object], reply: ScriptedReply) -> dict[str, int]:
    """The usage of a reply given ``n`` times: each choice's completion tokens count."""
    counted = usage(body, reply_text(reply))
    n = choice_count(body)
    if n > 1:
        counted["completion_tokens"] *= n
        counted["total_tokens"] = counted["prompt_tokens"] + counted["completion_tokens"]
    return counted


def chat_completion(body: dict[str, object], reply: ScriptedReply, model: str) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` object with ``n`` identical choices (1 by default)."""
    message: dict[str, object] = {"role": "assistant", "content": None if reply.refusal else reply.content,
                               "refusal": reply.refusal}
    if reply.tool_calls:
        message["content"] = reply.content or None
        message["tool_calls"] = [_wire_call(call) for call in reply.tool_calls]
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": i, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
            for i in range(choice_count(body))
        ],
        "usage": chat_usage(body, reply),
        "system_fingerprint": "fp_holysheep_fake",
    }


def stream_events(
    body: dict[str, object], reply: ScriptedReply, model: str, words_per_chunk: int = 1
) -> list[bytes]:
    """The SSE events of a streamed reply, ``data: {chunk}\\n\\n`` each, ending with ``data: [DONE]``.

    The first chunk carries the role, then one chunk per ``words_per_chunk`` words, then a chunk with
    an empty delta and the finish reason; with ``stream_options.include_usage`` every chunk has
    ``"usage": null`` and a last chunk with ``"choices": []`` carries the usage. With ``n`` > 1 each
    chunk carries the same delta for every choice index.
    """
    cid, created = new_id("chatcmpl-"), int(time.time())
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))

    def chunk(choices: list[dict[str, object]], usage_value: dict[str, int] | None = None) -> bytes:
        obj: dict[str, object] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_holysheep_fake",
            "choices": choices,
        }
        if include_usage:
            obj["usage"] = usage_value
        return b"data: " + dumps(obj) + b"\n\n"

    n = choice_count(body)

    def choice(delta: dict[str, object], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": i, "delta": delta, "logprobs": None, "finish_reason": finish} for i in range(n)]

    events = [chunk(choice({"role": "assistant", "content": "", "refusal": None}))]
    if reply.refusal:
        events.append(chunk(choice({"refusal": reply.refusal})))
    else:
        events.extend(chunk(choice({"content": p})) for p in split_pieces(reply.content, words_per_chunk))
    for index, call in enumerate(reply.tool_calls):  # the head (id, name), then the arguments in pieces
        events.append(chunk(choice({"tool_calls": [_wire_call({**call, "arguments": ""}, index)]})))
        args = call["arguments"]
        events.extend(chunk(choice({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + 16]}}]}))
                      for i in range(0, len(args), 16))
    events.append(chunk(choice({}, reply.finish_reason)))
    if include_usage:
        events.append(chunk([], chat_usage(body, reply)))
    events.append(b"data: [DONE]\n\n")
    return events


def error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def model_object(model_id: str, owned_by: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": MODEL_CREATED, "owned_by": owned_by}


def models_list(models: dict[str, str] | Sequence[str]) -> dict[str, Any]:
    """``{"object": "list", "data": [model, ...]}``; ``models`` maps id to owner (or is a list of ids)."""
    owners = models if isinstance(models, dict) else dict.fromkeys(models, "holysheep")
    return {"object": "list", "data": [model_object(mid, owner) for mid, owner in owners.items()]}


def quota_object(limit: int, used: int, reset_at: str | int | None = None) -> dict[str, Any]:
    """HolySheep's quota object."""
    return {
        "object": "quota",
        "remaining": max(0, limit - used),
        "limit": limit,
        "used": used,
        "unit": "tokens",
        "reset_at": reset_at,
    }

"""FakeServer replies for structured outputs: given JSON, a valid example of the requested schema, or a
value that violates it, so extraction code can be tested offline."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from ._replies import ReplySpec, ScriptedReply, resolve_reply

__all__ = ["json_reply", "prompt_schema", "refusal_reply", "reply_sequence", "schema_example", "schema_reply"]

_FORMAT_EXAMPLES = {"date": "2025-01-01", "date-time": "2025-01-01T00:00:00Z", "time": "00:00:00",
                    "email": "user@example.com", "uri": "https://example.com", "uuid":
                    "00000000-0000-4000-8000-000000000000"}


def json_reply(value: object, *, finish_reason: str = "stop") -> ScriptedReply:
    """A reply whose content is ``value`` as compact JSON (``FakeServer(reply=json_reply({...}))``)."""
    return ScriptedReply(json.dumps(value, separators=(",", ":"), ensure_ascii=False), finish_reason)


def refusal_reply(text: str = "I can't help with that.") -> ScriptedReply:
    """A refusal: ``content: null`` and ``message.refusal == text`` (streamed as ``delta.refusal``)."""
    return ScriptedReply("", "stop", refusal=text)


def _resolve(node: Mapping[str, object], root: Mapping[str, object]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    while isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
        ref = node.get("$ref")
    return node


_MAX_DEPTH = 8  # a recursive schema (a tree of models) stops here: empty arrays, null where allowed


def schema_example(schema: Mapping[str, object], root: Mapping[str, object] | None = None, _depth: int = 0) -> Any:
    """A small value that satisfies ``schema``: the first ``enum`` value, the first non-null ``anyOf``
    member, one array item, ``minimum`` (or 0) for numbers, ``"example"`` (or a sample of its ``format``)
    for strings, every property of an object. Recursive schemas end in empty arrays or ``null``."""
    root = schema if root is None else root
    node = _resolve(schema, root)
    deep = _depth >= _MAX_DEPTH
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return node["enum"][0]
    members = node.get("anyOf") or node.get("oneOf")
    if isinstance(members, list) and members:
        usable = [m for m in members if _resolve(m, root).get("type") != "null"]
        if not usable or (deep and len(usable) < len(members)):
            return None
        return schema_example(usable[0], root, _depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in node:
        return {name: schema_example(sub, root, _depth + 1) for name, sub in (node.get("properties") or {}).items()}
    if kind == "array":
        count = int(node.get("minItems", 0)) if deep else max(1, int(node.get("minItems", 1)))
        item = node.get("items")
        return [schema_example(item, root, _depth + 1) if isinstance(item, Mapping) else None for _ in range(count)]
    if kind == "string":
        fmt = node.get("format")
        text = _FORMAT_EXAMPLES.get(fmt, "example") if isinstance(fmt, str) else "example"
        return text.ljust(int(node.get("minLength", 0)), "x")
    if kind == "integer":
        return int(node.get("minimum", 0))
    if kind == "number":
        return float(node.get("minimum", 0))
    if kind == "boolean":
        return True
    return None


def _request_schema(body: Mapping[str, object]) -> Mapping[str, object] | None:
    fmt = body.get("response_format")
    envelope = fmt.get("json_schema") if isinstance(fmt, Mapping) else None
    schema = envelope.get("schema") if isinstance(envelope, Mapping) else None
    return schema if isinstance(schema, Mapping) else None


_SCHEMA_KEYS = ("properties", "$defs", "definitions", "anyOf", "oneOf", "items")


def _looks_like_schema(value: object) -> bool:
    return isinstance(value, dict) and (value.get("type") == "object" or any(k in value for k in _SCHEMA_KEYS))


def prompt_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first JSON schema written into the request's message text (system messages first), as JSON
    mode prompts carry it (instructor's ``Mode.JSON``, LangChain's ``json_mode`` with a schema in the
    prompt); ``None`` when no message holds one."""
    messages = [m for m in body.get("messages", ()) if isinstance(m, Mapping)]
    decoder = json.JSONDecoder()
    for message in sorted(messages, key=lambda m: m.get("role") != "system"):
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content}]
        for part in parts:
            text = part.get("text") if isinstance(part, Mapping) else None
            start = text.find("{") if isinstance(text, str) else -1
            while isinstance(text, str) and start >= 0:
                try:
                    value, _ = decoder.raw_decode(text, start)
                except ValueError:
                    value = None
                if _looks_like_schema(value):
                    return dict(value)
                start = text.find("{", start + 1)
    return None


def _violation(schema: Mapping[str, Any] | None, valid: object) -> object:
    required = list(schema.get("required", ())) if schema is not None else []
    if isinstance(valid, dict) and required:
        broken = copy.deepcopy(valid)
        del broken[required[0]]  # "Field required"
        return broken
    return ["not", "an", "object"]


def schema_reply(*, violate: bool = False, overrides: Mapping[str, object] | None = None
                 ) -> Callable[[dict[str, Any]], ScriptedReply]:
    """A reply spec that reads the request's ``response_format`` schema and answers with a valid example
    (`schema_example`, with ``overrides`` merged into a top-level object), or, with ``violate=True``, the
    same example without its first required property (a JSON array when there is none)."""

    def answer(body: dict[str, object]) -> ScriptedReply:
        schema = _request_schema(body)
        value = schema_example(schema) if schema is not None else {}
        if overrides and isinstance(value, dict):
            value.update(overrides)
        return json_reply(_violation(schema, value) if violate else value)

    return answer


def reply_sequence(*specs: ReplySpec) -> Callable[[dict[str, Any]], ScriptedReply]:
    """A reply spec that answers successive chat requests with ``specs`` in turn, then repeats the last
    (e.g. ``reply_sequence(schema_reply(violate=True), schema_reply())`` to exercise ``max_repairs``)."""
    if not specs:
        raise ValueError("reply_sequence needs at least one reply spec")
    counter = itertools.count()

    def answer(body: dict[str, object]) -> ScriptedReply:
        return resolve_reply(specs[min(next(counter), len(specs) - 1)], body)

    return answer

"""Scripted FakeServer replies: tool calls, a reply script (from a list or a file), and an automatic mode
that calls the request's tools and answers ``response_format`` with JSON valid for its schema.

A script is stateless for matched entries: the reply for a conversation depends only on its messages
(the last user message picks the entry; the number of assistant turns since then picks the reply), so
retried and concurrent conversations get the same answers.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._replies import ReplySpec, ScriptedReply, _text, new_id, resolve_reply
from ._structured import json_reply, prompt_schema, schema_example

__all__ = ["Script", "auto_reply", "tool_call", "tool_reply"]

TOOL_RESULTS = "{tool_results}"
"""In a scripted reply's content: replaced by the tool results sent since the model's last turn."""


def tool_call(name: str, arguments: Mapping[str, object] | str | None = None, *,
              id: str | None = None) -> dict[str, str]:
    """One tool call for `tool_reply`: ``arguments`` as a dict (sent as compact JSON) or a raw string
    (to test arguments that are not valid JSON); ``id`` defaults to ``call_`` + 24 hex characters."""
    raw = arguments if isinstance(arguments, str) else json.dumps(
        dict(arguments or {}), separators=(",", ":"), ensure_ascii=False)
    return {"id": id or new_id("call_")[:29], "name": name, "arguments": raw}


def tool_reply(*calls: Mapping[str, Any], content: str = "") -> ScriptedReply:
    """A reply that calls tools (``finish_reason: "tool_calls"``): each call made by `tool_call`, or a dict
    ``{"name": ..., "arguments": {...}}``."""
    if not calls:
        raise ValueError("tool_reply needs at least one tool call")
    made = tuple(c if isinstance(c.get("arguments"), str) and "id" in c
                 else tool_call(str(c["name"]), c.get("arguments"), id=c.get("id")) for c in calls)
    return ScriptedReply(content, "tool_calls", tool_calls=made)


# ------------------------------------------------------------------ reading a request's messages
def _messages(body: Mapping[str, Any]) -> list[Mapping[str, object]]:
    return [m for m in body.get("messages", ()) if isinstance(m, Mapping)]


def last_user_text(body: Mapping[str, object]) -> str:
    """The text of the last user message ("" when there is none)."""
    users = [m for m in _messages(body) if m.get("role") == "user"]
    return _text(users[-1].get("content")) if users else ""


def turns_since_user(body: Mapping[str, object]) -> int:
    """How many assistant messages follow the last user message (0 on a fresh question)."""
    count = 0
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            break
        count += message.get("role") == "assistant"
    return count


def tool_results(body: Mapping[str, object]) -> list[str]:
    """The contents of the ``tool`` messages at the end of the conversation (since the last assistant turn)."""
    out: list[str] = []
    for message in reversed(_messages(body)):
        if message.get("role") != "tool":
            break
        out.append(_text(message.get("content")))
    return out[::-1]


def _request_tools(body: Mapping[str, Any]) -> list[Mapping[str, object]]:
    tools = body.get("tools")
    return [t["function"] for t in tools or () if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)]


def _schema_json(body: Mapping[str, object]) -> ScriptedReply | None:
    fmt = body.get("response_format")
    envelope = fmt.get("json_schema") if isinstance(fmt, Mapping) else None
    schema = envelope.get("schema") if isinstance(envelope, Mapping) else None
    if isinstance(schema, Mapping):
        return json_reply(schema_example(schema))
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        schema = prompt_schema(body)
        return json_reply(schema_example(schema) if schema is not None else {})
    return None


def auto_reply(fallback: ReplySpec = "echo") -> Callable[[dict[str, Any]], ScriptedReply]:
    """A reply spec that answers like a model that follows the request (``holysheep mock-server --structured``):

    - with ``tools`` and no tool results yet: a call of the tool named by ``tool_choice`` (else the first
      tool), with arguments valid for its ``parameters`` schema (`schema_example`);
    - with ``response_format``: JSON valid for its ``json_schema``; for ``json_object``, an example of the
      schema written into the messages (`prompt_schema`), else ``{}``;
    - after tool results: ``"Tool results: <the results joined by '; '>"``;
    - otherwise ``fallback`` (the last user message by default).
    """

    def answer(body: dict[str, object]) -> ScriptedReply:
        results = tool_results(body)
        tools = _request_tools(body)
        choice = body.get("tool_choice")
        if tools and not results and choice != "none":
            named = choice.get("function", {}).get("name") if isinstance(choice, Mapping) else None
            tool = next((t for t in tools if t.get("name") == named), tools[0])
            params = tool.get("parameters")
            args = schema_example(params) if isinstance(params, Mapping) else {}
            return tool_reply(tool_call(str(tool.get("name", "tool")), args if isinstance(args, dict) else {}))
        structured = _schema_json(body)
        if structured is not None:
            return structured
        if results:
            return ScriptedReply("Tool results: " + "; ".join(results))
        return resolve_reply(fallback, body)

    return answer


# ------------------------------------------------------------------ scripts
def _reply_of(spec: object, body: Mapping[str, object], where: str) -> ScriptedReply:
    """One scripted reply: a string (content), or a dict with ``content``, ``tool_calls``, ``json``,
    ``schema: true``, ``finish_reason`` or ``refusal``."""
    if isinstance(spec, ScriptedReply):
        return spec
    if isinstance(spec, str):
        return ScriptedReply(spec.replace(TOOL_RESULTS, "; ".join(tool_results(body))))
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: a reply is a string or an object, got {spec!r}")
    if spec.get("schema"):
        made = _schema_json(body)
        return made if made is not None else json_reply({})
    if "json" in spec:
        return json_reply(spec["json"], finish_reason=str(spec.get("finish_reason", "stop")))
    content = str(spec.get("content") or "").replace(TOOL_RESULTS, "; ".join(tool_results(body)))
    calls = spec.get("tool_calls")
    if calls:
        if not isinstance(calls, list) or not all(isinstance(c, Mapping) and "name" in c for c in calls):
            raise ValueError(f"{where}: tool_calls is a list of {{\"name\": ..., \"arguments\": {{...}}}}")
        reply = tool_reply(*calls, content=content)
        return ScriptedReply(content, str(spec.get("finish_reason", "tool_calls")), tool_calls=reply.tool_calls)
    refusal = spec.get("refusal")
    return ScriptedReply(content, str(spec.get("finish_reason", "stop")),
                         refusal=str(refusal) if refusal else None)


class Script:
    """A reply spec from a list of entries (``FakeServer(reply=Script([...]))``, ``mock-server --script``).

    Each entry is an object:

    - ``{"match": "weather", "replies": [reply, reply, ...]}``: used when ``match`` occurs in the last user
      message (case-insensitive). The reply is picked by how many assistant turns follow that message, so a
      tool loop gets the tool call first and the answer after the tool results (the last reply repeats).
      ``"reply": ...`` is short for a one-element ``replies``.
    - an entry without ``match``: taken in order by requests that match no entry.

    A reply is a string (its content; ``{tool_results}`` is replaced by the tool results since the model's
    last turn) or an object: ``{"content", "tool_calls": [{"name", "arguments"}], "json": value,
    "schema": true, "finish_reason", "refusal"}``. A request nothing answers gets ``fallback``.
    """

    def __init__(self, entries: Iterable[Mapping[str, object] | str], *, fallback: ReplySpec = "echo") -> None:
        self.matched: list[tuple[str, list[object]]] = []
        self.ordered: list[object] = []
        for n, entry in enumerate(entries):
            where = f"script entry {n + 1}"
            if isinstance(entry, str) or (isinstance(entry, Mapping) and "match" not in entry
                                          and "reply" not in entry and "replies" not in entry):
                self.ordered.append(entry)
                continue
            if not isinstance(entry, Mapping):
                raise ValueError(f"{where}: expected an object or a string, got {entry!r}")
            replies = entry.get("replies", [entry["reply"]] if "reply" in entry else None)
            if not isinstance(replies, list) or not replies:
                raise ValueError(f"{where}: needs \"reply\" or a non-empty \"replies\" list")
            if "match" in entry:
                self.matched.append((str(entry["match"]).lower(), replies))
            else:
                self.ordered.extend(replies)
        self.fallback = fallback
        self._counter = itertools.count()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, fallback: ReplySpec = "echo") -> Script:
        """Read a script file: a JSON list of entries, ``{"replies": [...]}``, or JSON Lines (one entry a line).
        Raises `ValueError` naming the file and what is wrong."""
        text = Path(path).read_text(encoding="utf-8")
        try:
            data: object = json.loads(text)
        except ValueError:
            try:
                data = [json.loads(line) for line in text.splitlines() if line.strip()]
            except ValueError as exc:
                raise ValueError(f"{path}: not JSON or JSON Lines ({exc})") from exc
        if isinstance(data, Mapping):
            data = data.get("replies", data.get("entries"))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of entries (or {{\"replies\": [...]}})")
        try:
            return cls(data, fallback=fallback)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc

    def __call__(self, body: dict[str, object]) -> ScriptedReply:
        user = last_user_text(body).lower()
        for needle, replies in self.matched:
            if needle in user:
                turn = min(turns_since_user(body), len(replies) - 1)
                return _reply_of(replies[turn], body, f"reply for {needle!r}")
        if self.ordered:
            with self._lock:
                n = next(self._counter)
            if n < len(self.ordered):
                return _reply_of(self.ordered[n], body, f"script reply {n + 1}")
        return resolve_reply(self.fallback, body)


def script_from(value: str | os.PathLike[str] | Sequence[Mapping[str, object] | str] | Script,
                *, fallback: ReplySpec = "echo") -> Script:
    """A `Script` from a file path, a list of entries, or a Script."""
    if isinstance(value, Script):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Script.load(value, fallback=fallback)
    return Script(value, fallback=fallback)

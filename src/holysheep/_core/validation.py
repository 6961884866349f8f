"""Argument checks for chat requests. Each failure raises InvalidRequestError naming the field."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from holysheep._exceptions import InvalidRequestError

__all__ = ["VALID_ROLES", "body_error", "normalize_messages", "validate_sampling"]

VALID_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _fail(field: str, reason: str, hint: str) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {reason}. {hint}", field=field, reason=reason)


def normalize_messages(messages: object) -> list[dict[str, object]]:
    """Check ``messages`` and return them as plain dicts (typed ``Message`` objects are dumped)."""
    if type(messages) is not list and (isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence)):
        raise _fail(
            "messages",
            f"must be a list of messages, got {type(messages).__name__}",
            'Pass messages=[{"role": "user", "content": "Hi"}].',
        )
    if not messages:
        raise _fail("messages", "is empty", 'Pass at least one message, e.g. [{"role": "user", "content": "Hi"}].')
    out: list[dict[str, object]] = []
    for i, msg in enumerate(messages):
        if type(msg) is not dict:  # plain dicts (the common case) skip the ABC checks
            if isinstance(msg, BaseModel):
                msg = msg.model_dump(exclude_none=True)
            if not isinstance(msg, Mapping):
                raise _fail(f"messages[{i}]", f"must be a dict or Message, got {type(msg).__name__}",
                            'Each message looks like {"role": "user", "content": "..."}.')
        role = msg.get("role")
        if role not in VALID_ROLES:
            raise _fail(f"messages[{i}].role", f"unknown role {role!r}",
                        f"Use one of {', '.join(sorted(VALID_ROLES))}.")
        content = msg.get("content")
        if type(content) is str:
            pass
        elif content is None:
            if role != "assistant" and "content" not in msg:
                raise _fail(f"messages[{i}].content", "is missing", "Give the message text as content='...'.")
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, Mapping) or "type" not in part:
                    raise _fail(f"messages[{i}].content[{j}]", "content parts must be dicts with a 'type'",
                                'Use {"type": "text", "text": "..."} or {"type": "image_url", ...}.')
        elif not isinstance(content, str):
            raise _fail(f"messages[{i}].content",
                        f"must be a string or a list of parts, got {type(content).__name__}",
                        "Convert it to text first, e.g. content=str(value).")
        out.append(msg if type(msg) is dict else dict(msg))
    return out


def _number(field: str, value: object, lo: float, hi: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise _fail(field, f"must be a number, got {value!r}", f"Use a value between {lo} and {hi}.")
    if not lo <= value <= hi:
        raise _fail(field, f"{value} is outside [{lo}, {hi}]", f"Use a value between {lo} and {hi}.")


def _positive_int(field: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(field, f"must be an integer >= 1, got {value!r}", f"Pass {field}=1 or more.")


def validate_sampling(model: object, params: Mapping[str, object]) -> None:
    """Check the model name and the sampling parameters that have a valid range."""
    if not isinstance(model, str) or not model.strip():
        raise _fail("model", f"must be a non-empty string, got {model!r}", "For example model='deepseek-v3.2'.")
    for name, value in params.items():  # only the parameters given: most calls pass two or three
        if value is not None:
            check = _CHECKS.get(name)
            if check is not None:
                check(name, value)


def _range(lo: float, hi: float) -> Callable[[str, object], None]:
    return lambda field, value: _number(field, value, lo, hi)


def _stop(field: str, v: object) -> None:
    if not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(s, str) for s in v))):
        raise _fail(field, f"must be a string or a list of strings, got {v!r}", "For example stop=['\\n\\n'].")


def _seed(field: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(field, f"must be an integer, got {v!r}", "For example seed=42.")


def _stream_options(field: str, v: object) -> None:
    if not isinstance(v, Mapping):
        raise _fail(field, f"must be a dict, got {type(v).__name__}", 'Use stream_options={"include_usage": True}.')
    if "include_usage" in v and not isinstance(v["include_usage"], bool):
        raise _fail("stream_options.include_usage", f"must be True or False, got {v['include_usage']!r}",
                    'Use stream_options={"include_usage": True}.')


_TOOL_HINT = 'Use tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {...}}}].'


def _tools(field: str, tools: object) -> None:
    if not isinstance(tools, list):
        raise _fail(field, f"must be a list of tool definitions, got {type(tools).__name__}", _TOOL_HINT)
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise _fail(f"tools[{i}]", f"must be a dict, got {type(tool).__name__}", _TOOL_HINT)
        if tool.get("type", "function") == "function":
            fn = tool.get("function")
            if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn.get("name"):
                raise _fail(f"tools[{i}].function", "must be a dict with a non-empty 'name'", _TOOL_HINT)


def _flag(field: str, v: object) -> None:
    if not isinstance(v, bool):
        raise _fail(field, f"must be True or False, got {v!r}", f"Pass {field}=True or {field}=False.")


def _top_logprobs(field: str, v: object) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 20:
        raise _fail(field, f"must be an integer from 0 to 20, got {v!r}", "For example top_logprobs=5.")


def _tool_choice(field: str, v: object) -> None:
    if not isinstance(v, (str, Mapping)):
        raise _fail(field, f"must be a string or a dict, got {type(v).__name__}",
                    "Use 'auto', 'none', 'required' or {'type': 'function', 'function': {'name': ...}}.")


def _logit_bias(field: str, v: object) -> None:
    if not (isinstance(v, Mapping) and all(isinstance(b, (int, float)) and not isinstance(b, bool)
                                           for b in v.values())):
        raise _fail(field, f"must be a dict of token ids to numbers, got {v!r}"[:200],
                    'For example logit_bias={"50256": -100}.')


def _text(field: str, v: object) -> None:
    if not isinstance(v, str):
        raise _fail(field, f"must be a string, got {type(v).__name__}", f"Pass {field}='...'.")


def _metadata(field: str, v: object) -> None:
    if not (isinstance(v, Mapping) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())):
        raise _fail(field, f"must be a dict of strings to strings, got {type(v).__name__}",
                    'For example metadata={"run": "nightly"}.')


def _dict(example: str) -> Callable[[str, object], None]:
    def check(field: str, v: object) -> None:
        if not isinstance(v, Mapping):
            raise _fail(field, f"must be a dict, got {type(v).__name__}", f"For example {field}={example}.")

    return check


def _str_list(example: str) -> Callable[[str, object], None]:
    def check(field: str, v: object) -> None:
        if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise _fail(field, f"must be a list of strings, got {v!r}"[:200], f"For example {field}={example}.")

    return check


def _functions(field: str, v: object) -> None:
    hint = 'Use functions=[{"name": "get_weather", "parameters": {...}}] (or tools=, which replaces it).'
    if not isinstance(v, list):
        raise _fail(field, f"must be a list of function definitions, got {type(v).__name__}", hint)
    for i, fn in enumerate(v):
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn.get("name"):
            raise _fail(f"{field}[{i}]", "must be a dict with a non-empty 'name'", hint)


def _function_call(field: str, v: object) -> None:
    if not isinstance(v, (str, Mapping)):
        raise _fail(field, f"must be a string or a dict, got {type(v).__name__}",
                    "Use 'auto', 'none' or {'name': ...} (or tool_choice=, which replaces it).")


def _extra_query(field: str, v: object) -> None:
    if not (isinstance(v, Mapping) and all(isinstance(k, str) for k in v)):
        raise _fail(field, f"must be a dict with string keys, got {type(v).__name__}",
                    'For example extra_query={"api-version": "2025-01-01"}.')


def _extra_body(field: str, v: object) -> None:
    if not isinstance(v, Mapping):
        raise _fail(field, f"must be a dict, got {type(v).__name__}",
                    'Pass server-specific fields as extra_body={"top_k": 20}.')
    clash = [k for k in ("model", "messages", "stream", "stream_options") if k in v]
    if clash:
        raise _fail(f"extra_body.{clash[0]}", "would override an argument the SDK sets and relies on (the "
                    "model, the messages, and whether and how the reply is streamed)",
                    f"Pass {clash[0]}= to create() instead.")
    found = _find_bad(v, "extra_body")
    if found:
        raise _fail(found[0], found[1], "Pass only JSON types (str, int, float, bool, None, lists, dicts).")


# One check per parameter with a valid range or type. response_format is checked where its schema is built
# (_schema.response_format_for).
_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "temperature": _range(0.0, 2.0),
    "top_p": _range(0.0, 1.0),
    "presence_penalty": _range(-2.0, 2.0),
    "frequency_penalty": _range(-2.0, 2.0),
    "max_tokens": _positive_int,
    "max_completion_tokens": _positive_int,
    "n": _positive_int,
    "stop": _stop,
    "seed": _seed,
    "tools": _tools,
    "stream_options": _stream_options,
    "logprobs": _flag,
    "parallel_tool_calls": _flag,
    "store": _flag,
    "top_logprobs": _top_logprobs,
    "tool_choice": _tool_choice,
    "logit_bias": _logit_bias,
    "user": _text,
    "reasoning_effort": _text,
    "service_tier": _text,
    "metadata": _metadata,
    "extra_body": _extra_body,
    "extra_query": _extra_query,
    "functions": _functions,
    "function_call": _function_call,
    "safety_identifier": _text,
    "verbosity": _text,
    "prompt_cache_key": _text,
    "prompt_cache_retention": _text,
    "audio": _dict('{"voice": "alloy", "format": "wav"}'),
    "prediction": _dict('{"type": "content", "content": "..."}'),
    "moderation": _dict("{...}"),
    "prompt_cache_options": _dict("{...}"),
    "web_search_options": _dict('{"search_context_size": "low"}'),
    "modalities": _str_list('["text"]'),
}


def _find_bad(value: object, path: str) -> tuple[str, str] | None:
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path, f"contains a character that is not valid UTF-8 (position {exc.start}: a lone surrogate)"
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return path, f"has a key of type {type(k).__name__}; JSON object keys must be strings"
            found = _find_bad(v, f"{path}.{k}" if path else k)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _find_bad(v, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, BaseModel):
        return None
    return path, f"holds a {type(value).__name__}, which cannot be sent as JSON"


def body_error(body: Mapping[str, object], exc: Exception) -> InvalidRequestError:
    """The error for a request body that could not be encoded as JSON, naming the offending field."""
    found = _find_bad(body, "")
    field, reason = found if found else ("body", f"cannot be encoded as JSON ({exc})")
    return _fail(field or "body", reason,
                 "Pass only JSON types (str, int, float, bool, None, lists and dicts with string keys).")

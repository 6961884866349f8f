"""JSON from a server or a model: `load_json`, the one decoder of such text (bounded in depth, so that deep
nesting is a `ValueError`, never a ``RecursionError``), and a small checker for the strict JSON-schema subset
(``type``, ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties: false``, ``items``,
``anyOf``, ``$ref``), for replies to a plain schema dict (there is no pydantic type to validate them with).
Other keywords are not checked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

__all__ = ["DENSE_JSON_FLOOR", "MAX_JSON_DEPTH", "MIN_BYTES_PER_NODE", "JSONTooDeepError", "JSONTooDenseError",
           "SchemaMismatch", "density_problem", "load_json", "schema_errors"]

MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects decoded (pydantic-core's parser limit, which typed models meet too)."""


DENSE_JSON_FLOOR = 1 << 20  # a body this long or longer is checked for density before it is decoded (1 MiB)
MIN_BYTES_PER_NODE = 4  # bytes per array, object or further element such a body needs on average
"""A body of ``[],[],...`` (3 bytes a list, 64 bytes each once decoded) or ``1,1,...`` against a typed model (a
validation error each) costs 20 to 100 times its size; real replies (logprobs, embeddings, token ids) spend 6 or
more bytes per element."""


class JSONTooDeepError(ValueError):
    """The JSON text nests arrays or objects deeper than `MAX_JSON_DEPTH` levels."""


class JSONTooDenseError(ValueError):
    """A JSON text of `DENSE_JSON_FLOOR` bytes or more holds more than one array, object or element per
    `MIN_BYTES_PER_NODE` bytes (see `density_problem`)."""


def density_problem(text: str | bytes | bytearray) -> str | None:
    """Why ``text`` is refused before it is decoded (a body of tiny arrays, objects or elements, which decoding
    or validating would blow up in memory and time), or None. Counted at C speed (``[``, ``{`` and ``,``, also
    inside strings: only a body that is mostly punctuation is refused)."""
    size = len(text)
    if size < DENSE_JSON_FLOOR:
        return None
    if isinstance(text, str):
        nodes = text.count("[") + text.count("{") + text.count(",")
    else:
        nodes = text.count(b"[") + text.count(b"{") + text.count(b",")
    if nodes * MIN_BYTES_PER_NODE <= size:
        return None
    return (f"the JSON holds {nodes} arrays, objects or elements in {size} bytes (more than one per "
            f"{MIN_BYTES_PER_NODE} bytes), which would cost many times its size to decode: refused unread")


def load_json(text: str | bytes | bytearray) -> object:
    """``text`` decoded like ``json.loads`` (same values, same errors), but nesting deeper than
    `MAX_JSON_DEPTH` levels raises `JSONTooDeepError` (a ``ValueError``) instead of a ``RecursionError``
    here or in any code that walks the value later. A body of 1 MiB or more that is mostly tiny arrays, objects
    or elements raises `JSONTooDenseError` (a ``ValueError``) before it is decoded (`density_problem`)."""
    problem = density_problem(text)
    if problem is not None:
        raise JSONTooDenseError(problem)
    try:
        return from_json(text)  # pydantic-core: fast, and bounded in depth
    except ValueError as exc:
        if "recursion limit" in str(exc):
            raise JSONTooDeepError(f"the JSON nests arrays or objects deeper than {MAX_JSON_DEPTH} levels") from None
    try:  # not JSON for pydantic-core: json's own error (and its leniency, such as lone surrogates)
        value = json.loads(text)
    except RecursionError:
        value = _TOO_DEEP
    if value is _TOO_DEEP or _deeper_than(value, MAX_JSON_DEPTH):
        raise JSONTooDeepError(f"the JSON nests arrays or objects deeper than {MAX_JSON_DEPTH} levels")
    return value


_TOO_DEEP = object()


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts deeper than ``limit`` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                       "integer": (int,), "number": (int, float), "boolean": (bool,),
                                       "null": (type(None),)}


class SchemaMismatch(ValueError):
    """The reply is JSON but does not match the schema; ``errors`` are ``(location, message)`` pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{loc}: {msg}" for loc, msg in errors))
        self.errors = errors


def _is_type(value: object, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _check(value: object, node: Mapping[str, Any], root: Mapping[str, object], loc: str,
           out: list[tuple[str, str]]) -> None:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        _check(value, target, root, loc, out)
    members = node.get("anyOf")
    if isinstance(members, list) and members:
        if not any(not schema_errors(value, m, root) for m in members if isinstance(m, Mapping)):
            out.append((loc, "matches none of the allowed alternatives"))
        return
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_is_type(value, k) for k in kinds):
        out.append((loc, f"Input should be of type {' or '.join(kinds)}"))
        return
    if "enum" in node and value not in node["enum"]:
        out.append((loc, f"Input should be one of {', '.join(repr(v) for v in node['enum'])}"))
    if "const" in node and value != node["const"]:
        out.append((loc, f"Input should be {node['const']!r}"))
    if isinstance(value, dict):
        found = node.get("properties")
        props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        for name in node.get("required", ()):
            if name not in value:
                out.append((_join(loc, name), "Field required"))
        for name, item in value.items():
            if name in props:
                _check(item, props[name], root, _join(loc, name), out)
            elif node.get("additionalProperties") is False:
                out.append((_join(loc, name), "Extra inputs are not permitted"))
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            _check(item, node["items"], root, _join(loc, str(i)), out)


def _join(loc: str, part: str) -> str:
    return f"{loc}.{part}" if loc else part


def schema_errors(value: object, schema: Mapping[str, object], root: Mapping[str, object] | None = None
                  ) -> list[tuple[str, str]]:
    """Where ``value`` breaks ``schema``: ``(location, message)`` pairs, empty when it matches."""
    out: list[tuple[str, str]] = []
    _check(value, schema, schema if root is None else root, "", out)
    return out

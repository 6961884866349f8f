"""Strict JSON schemas for structured outputs, built from a pydantic model, a type or a schema dict.

Pure code, no I/O. OpenAI-compatible servers in strict mode want: an object at the root, every object
with ``additionalProperties: false``, every property listed in ``required`` (an optional field is a union
with ``null``), nested models under ``$defs``, ``anyOf`` rather than ``oneOf``.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, Union

from pydantic import BaseModel, TypeAdapter, create_model

from holysheep._core.json_check import SchemaMismatch, load_json, schema_errors
from holysheep._exceptions import InvalidRequestError

__all__ = ["ResponseFormat", "response_format_for", "strict_json_schema"]

T = TypeVar("T")

WRAP_KEY = "value"
"""The property that holds a non-object type (``list[Model]``, a ``Literal``) in its object wrapper."""

_DROP = frozenset({"title", "default", "discriminator"})
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NULL = {"type": "null"}


def _allows_null(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in node and node["const"] is None:
        return True
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    return any(_allows_null(member) for member in node.get("anyOf", ()) if isinstance(member, Mapping))


def _strict(node: object, where: str) -> Any:
    if isinstance(node, list):
        return [_strict(member, where) for member in node]
    if not isinstance(node, Mapping):
        return node
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:  # older pydantic: {"allOf": [{"$ref"}], "description"}
        node = {**{k: v for k, v in node.items() if k != "allOf"}, **all_of[0]}
    out: dict[str, object] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            continue  # below, with "required"
        if key == "oneOf":
            key = "anyOf"
        if key == "$defs":
            out[key] = {name: _strict(sub, f"$defs.{name}") for name, sub in value.items()}
        elif key in ("items", "anyOf", "allOf", "prefixItems", "not"):
            out[key] = _strict(value, where)
        else:
            out[key] = value
    properties = node.get("properties")
    if node.get("type") == "object" or isinstance(properties, Mapping):
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) or (extra is True and not properties):
            raise InvalidRequestError(
                f"response_format: {where or 'the root'} is a free-form mapping (dict[str, ...]); strict "
                "structured outputs need every key declared. Use a model with named fields, or a list of "
                "key/value models.", field="response_format")
        required = set(node.get("required", ()))
        props: dict[str, object] = {}
        for name, sub in (properties or {}).items():
            strict_sub = _strict(sub, f"{where}.{name}" if where else name)
            if name not in required and not _allows_null(strict_sub):
                if set(strict_sub) == {"anyOf"}:
                    strict_sub = {"anyOf": [*strict_sub["anyOf"], dict(_NULL)]}
                else:
                    strict_sub = {"anyOf": [strict_sub, dict(_NULL)]}
            props[name] = strict_sub
        out["properties"] = props
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def strict_json_schema(schema: Mapping[str, object]) -> dict[str, object]:
    """``schema`` in the strict form: ``additionalProperties: false`` and every property required (a field
    that was optional becomes a union with ``null``), ``oneOf`` as ``anyOf``, no ``title``/``default``.

    Raises `InvalidRequestError` for a free-form mapping (strict mode cannot express it).
    """
    out = _strict(schema, "")
    if not isinstance(out, dict):  # pragma: no cover - callers pass a mapping
        raise InvalidRequestError("response_format: a JSON schema must be an object.", field="response_format")
    return out


def _type_name(tp: object) -> str:
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if origin is None:
        name = getattr(tp, "__name__", None)
        return name if isinstance(name, str) else str(tp)
    head = getattr(origin, "__name__", None) or str(origin).removeprefix("typing.")
    if origin is typing.Literal:
        head = "Literal"
    parts = [str(a) if origin is typing.Literal else _type_name(a) for a in args]
    return "_".join([head, *parts])


def _schema_name(raw: str) -> str:
    name = _NAME_CHARS.sub("_", raw).strip("_")[:64]
    return name or "response"


def _accepts_none(annotation: object) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _accepts_none(typing.get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(_accepts_none(arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return None in typing.get_args(annotation)
    return False


def _drop_nulls(data: object, tp: object) -> bool:
    """Remove ``null`` values that strict mode forced on defaulted fields that do not accept ``None`` (the
    default then applies). Walks ``data`` along the type; returns whether anything was removed."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _drop_nulls(data, args[0])
    if origin is Union or origin is types.UnionType:
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        return _drop_nulls(data, models[0]) if len(models) == 1 else False
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if not isinstance(data, dict):
            return False
        changed = False
        for name, field in tp.model_fields.items():
            key = field.alias or name
            if key not in data:
                continue
            if data[key] is None and not field.is_required() and not _accepts_none(field.annotation):
                del data[key]
                changed = True
            else:
                changed = _drop_nulls(data[key], field.annotation) or changed
        return changed
    if isinstance(data, list) and origin in (list, set, frozenset, tuple, typing.Sequence) and args:
        changed = False
        for i, item in enumerate(data):
            item_type = args[0] if origin is not tuple or args[-1] is Ellipsis else args[min(i, len(args) - 1)]
            changed = _drop_nulls(item, item_type) or changed
        return changed
    if isinstance(data, dict) and origin is dict and len(args) == 2:
        changed = False
        for value in data.values():
            changed = _drop_nulls(value, args[1]) or changed
        return changed
    return False


@dataclass(frozen=True)
class ResponseFormat(Generic[T]):
    """What ``parse`` sends as ``response_format`` and how it turns the reply into a ``T``.

    ``param``: the ``{"type": "json_schema", ...}`` envelope. ``wrapped``: the type is not an object, so
    the schema is ``{"value": <type>}`` and ``parse`` unwraps it. ``adapter`` is ``None`` for a plain
    schema dict (the reply is only decoded as JSON).
    """

    param: dict[str, Any]
    target: object
    adapter: TypeAdapter[object] | None = None
    wrapped: bool = False

    @property
    def name(self) -> str:
        """The schema name sent in ``json_schema.name``."""
        envelope = self.param.get("json_schema")
        return str(envelope.get("name", "")) if isinstance(envelope, Mapping) else ""

    def validate(self, text: str) -> T:
        """The reply ``text`` as a ``T``. Raises pydantic's `ValidationError`; for a plain schema dict, a
        `ValueError` (text that is not JSON, or `SchemaMismatch` listing where it breaks the schema)."""
        if self.adapter is None:
            value: object = load_json(text)
            schema = self.param.get("json_schema", {}).get("schema") if self.param.get("type") == "json_schema" \
                else None
            errors = schema_errors(value, schema) if isinstance(schema, Mapping) else []
            if errors:
                raise SchemaMismatch(errors)
            if self.wrapped:
                if not isinstance(value, dict) or WRAP_KEY not in value:
                    raise ValueError(f"expected an object with the key {WRAP_KEY!r}")
                value = value[WRAP_KEY]
            return typing.cast(T, value)
        try:
            data = load_json(text)
        except ValueError:
            data = None
        else:
            inner = data.get(WRAP_KEY) if self.wrapped and isinstance(data, dict) else data
            if _drop_nulls(inner, self.target):
                text = json.dumps(data)
        result = self.adapter.validate_json(text)  # also reports text that is not JSON (json_invalid)
        return typing.cast(T, getattr(result, WRAP_KEY) if self.wrapped else result)


def _inline_root_ref(schema: dict[str, object]) -> dict[str, object]:
    """A recursive model's schema is ``{"$ref": "#/$defs/Model", "$defs": ...}``: put the model's own object
    at the root (its ``$defs`` entry stays, for the references inside it)."""
    ref, defs = schema.get("$ref"), schema.get("$defs")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict):
        target = defs.get(ref[len("#/$defs/"):])
        if isinstance(target, dict):
            return {**target, "$defs": defs}
    return schema


def _envelope(name: str, schema: dict[str, object]) -> dict[str, object]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def response_format_for(value: object) -> ResponseFormat[object]:
    """The `ResponseFormat` for a pydantic model, another type (``list[Model]``, ``Literal[...]``, a
    ``TypedDict``, ...), a JSON-schema dict, or an already built ``{"type": "json_schema"|"json_object"}``.
    Results for types are cached (a batch asks once per item): do not mutate ``param``."""
    if isinstance(value, Mapping):
        if value.get("type") in ("json_schema", "json_object") and "properties" not in value:
            return ResponseFormat(dict(value), None)
        schema = strict_json_schema(value)
        name = _schema_name(str(value.get("title") or "response"))
        wrapped = schema.get("type") != "object"
        return ResponseFormat(_envelope(name, _wrap_schema(schema) if wrapped else schema), None, None, wrapped)
    try:
        return _for_type(value)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
    return _build_for_type(value)


@functools.lru_cache(maxsize=256)
def _for_type(value: object) -> ResponseFormat[object]:
    """Cached: building a schema takes milliseconds, and a batch asks for the same one per item."""
    return _build_for_type(value)


def _build_for_type(value: Any) -> ResponseFormat[object]:
    try:
        if isinstance(value, type) and issubclass(value, BaseModel):
            adapter: TypeAdapter[object] = TypeAdapter(value)
            schema = _inline_root_ref(adapter.json_schema())
            wrapped = schema.get("type") != "object"
            name = value.__name__
        else:
            adapter = TypeAdapter(value)
            schema = adapter.json_schema()
            wrapped = schema.get("type") != "object"
            name = _type_name(value)
        if wrapped:
            wrapper = create_model(_schema_name(name), **{WRAP_KEY: (value, ...)})  # type: ignore[call-overload]
            adapter = TypeAdapter(wrapper)
            schema = adapter.json_schema()
    except InvalidRequestError:
        raise
    except Exception as exc:  # pydantic cannot build a schema for it
        raise InvalidRequestError(
            f"response_format: cannot build a JSON schema for {value!r} ({type(exc).__name__}: {exc}). Pass a "
            "pydantic model, a type pydantic understands (list[Model], Literal[...]), or a JSON-schema dict.",
            field="response_format") from exc
    return ResponseFormat(_envelope(_schema_name(name), strict_json_schema(schema)), value, adapter, wrapped)


def _wrap_schema(schema: dict[str, object]) -> dict[str, object]:
    defs = schema.pop("$defs", None)
    out: dict[str, object] = {"type": "object", "properties": {WRAP_KEY: schema}, "required": [WRAP_KEY],
                           "additionalProperties": False}
    if defs:
        out["$defs"] = defs
    return out


"""``parse(to=...)`` of ``with_raw_response`` / ``with_streaming_response`` (openai-python's
``APIResponse.parse(to=SomeType)``): a body read in full, as another type. Pure code: no I/O.

`check_to` says, before any body is read, whether a type is supported; `parse_to` converts a read body, with
`APIResponseValidationError` (the key redacted from the body it quotes) when the body is not that type."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_origin

import httpx

from holysheep._core.body_chunks import text_decoder
from holysheep._core.built_response import decoded_response
from holysheep._core.json_check import load_json
from holysheep._core.keys import redact
from holysheep._core.scrub import request_id_of
from holysheep._exceptions import APIResponseValidationError, InvalidRequestError

__all__ = ["SUPPORTED", "check_to", "parse_to", "stream_to"]

SUPPORTED = ("str, bytes, int, float, bool, None, object, dict, list, a dict[...]/list[...]/Union[...] type, "
             "httpx.Response or a pydantic BaseModel subclass")

Kind = Literal["none", "str", "bytes", "int", "float", "bool", "response", "json", "adapter", "model"]
_SIMPLE: dict[Any, Kind] = {type(None): "none", str: "str", bytes: "bytes", int: "int", float: "float",
                            bool: "bool", httpx.Response: "response", object: "json", dict: "json", list: "json"}


def check_to(to: object) -> Kind:
    """What ``to`` asks for; `InvalidRequestError` naming the supported types when it is not one of them."""
    try:
        kind = _SIMPLE.get(to)
    except TypeError:  # an unhashable object: not a type
        kind = None
    if kind is not None:
        return kind
    origin = get_origin(to)
    if origin in (dict, list, Union, types.UnionType, Annotated):
        return "adapter"
    if isinstance(to, type):
        from pydantic import BaseModel

        if issubclass(to, BaseModel):
            return "model"
        if issubclass(to, httpx.Response):
            raise InvalidRequestError(f"parse(to={to.__name__}): a subclass of httpx.Response cannot be built "
                                      "from a response; pass httpx.Response itself.", field="to")
    raise InvalidRequestError(f"parse(to={to!r}) is not supported: `to` may be {SUPPORTED}.", field="to")


def parse_to(to: Any, *, status_code: int, headers: Mapping[str, str], content: bytes, request: httpx.Request,
             api_key: str | None) -> object:
    """``content`` (the decoded body) as ``to``: text with the ``Content-Type`` charset for ``str``; the JSON
    value for ``object``/``dict``/``list``; validated by pydantic for a model or a ``dict[...]``-like type; an
    ``httpx.Response`` (already read, its request's key masked) for ``httpx.Response``."""
    kind = check_to(to)
    if kind == "none":
        return None
    if kind == "bytes":
        return content
    if kind == "response":
        return decoded_response(httpx.Response, status_code, headers=headers, content=content, request=request)
    text = text_decoder(headers).decode(content, final=True)
    if kind == "str":
        return text
    if kind == "bool":
        return text.strip().lower() == "true"
    failure: str | None = None
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "json":
            value = load_json(content)
            if to is object or isinstance(value, to):
                return value
            failure = f"a JSON {type(value).__name__}, not a {to.__name__}"
        elif kind == "model":
            return to.model_validate_json(content)
        else:
            from pydantic import TypeAdapter

            return TypeAdapter(to).validate_json(content)
    except ValueError as exc:  # json's, int()'s and pydantic's errors are ValueErrors
        failure = f"not a valid {getattr(to, '__name__', to)!s} ({type(exc).__name__})"
    # raised outside the handler: pydantic's error (with the raw body) is not chained
    raise APIResponseValidationError(
        f"parse(to=...): the HTTP {status_code} body is {failure}.", status_code=status_code,
        request_id=request_id_of(headers, api_key), body=redact(content[:2000].decode("utf-8", "replace"), api_key))


def stream_to(stream: object, to: object) -> object:
    """``parse(to=...)`` of a ``stream=True`` response: its stream, when ``to`` is the stream's class (or a base
    of it); else `InvalidRequestError` (the raw body comes from ``read()``/``iter_lines()``, not ``parse``)."""
    origin = get_origin(to) or to
    if isinstance(origin, type) and isinstance(stream, origin):
        return stream
    raise InvalidRequestError(
        f"parse(to={to!r}) is not supported for a stream=True response: `to` may only be its stream class "
        f"({type(stream).__name__}). Read the raw server-sent events with read(), iter_bytes(), iter_text() or "
        "iter_lines() (with_streaming_response) instead.", field="to")

"""The wire formats and how a request, a reply or an OpenAI Batch ``url`` finds its own.

Built in: `CHAT` (``chat/completions``), `EMBEDDINGS` (``embeddings``) and, loaded on first use, the Responses
API (``responses``). `register` adds a format defined elsewhere (a test's, a provider's).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TypeVar

from holysheep._core.wire.base import TokenUsage, WireFormat
from holysheep._core.wire.chat import CHAT
from holysheep._core.wire.embeddings import EMBEDDINGS

if TYPE_CHECKING:
    from holysheep._core.request import RequestSpec

__all__ = ["CHAT", "EMBEDDINGS", "TokenUsage", "WireFormat", "register", "responses_wire", "wire_for_path",
           "wire_for_url", "wire_of", "wire_of_response"]

_BY_PATH: dict[str, WireFormat] = {}
_BY_URL: dict[str, WireFormat] = {}
_BY_TYPE: dict[type[object], WireFormat | None] = {}
_LAZY = {"responses": "holysheep._core.wire.responses"}
"""Formats whose module loads on first use (``import holysheep`` does not pay for their types)."""
_LAZY_URLS = {"/v1/responses": "responses", "/responses": "responses", "v1/responses": "responses"}


_W = TypeVar("_W", bound=WireFormat)


def register(wire: _W) -> _W:
    """Make ``wire`` the format of its ``path``, its ``urls`` and its ``response_type``; returns it."""
    _BY_PATH[wire.path.strip("/")] = wire
    for url in wire.urls:
        _BY_URL[url] = wire
    _BY_TYPE.clear()  # found again by type (a subclass of a registered type maps to it)
    _BY_TYPE[wire.response_type] = wire
    for known in _BY_PATH.values():
        _BY_TYPE.setdefault(known.response_type, known)
    return wire


register(CHAT)
register(EMBEDDINGS)


def _load(path: str) -> WireFormat | None:
    module = _LAZY.get(path)
    if module is None:
        return None
    importlib.import_module(module)  # registers itself
    return _BY_PATH.get(path)


def responses_wire() -> WireFormat:
    """The Responses API's format (loads its module)."""
    wire = _BY_PATH.get("responses") or _load("responses")
    assert wire is not None
    return wire


def wire_for_path(path: str) -> WireFormat | None:
    """The format served at ``path`` (under the base URL), None for an endpoint no format owns."""
    key = path.strip("/")
    return _BY_PATH.get(key) or _load(key)


def wire_of(spec: RequestSpec) -> WireFormat:
    """The format of a request: the one it was built by, else its path's; chat completions for any other path."""
    wire = getattr(spec, "wire", None)  # (a stand-in spec of a test may carry only a body)
    if isinstance(wire, WireFormat):
        return wire
    path = getattr(spec, "path", "chat/completions")
    return _BY_PATH.get(path) or wire_for_path(path) or CHAT


def wire_for_url(url: str) -> WireFormat | None:
    """The format of an OpenAI Batch line's ``url`` (``/v1/chat/completions``, ...), None for one none owns."""
    wire = _BY_URL.get(url)
    if wire is None and url in _LAZY_URLS:
        _load(_LAZY_URLS[url])
        wire = _BY_URL.get(url)
    return wire


def wire_of_response(response: object) -> WireFormat | None:
    """The format a reply object belongs to (by its type), None for a type no format parses into."""
    kind = type(response)
    try:
        return _BY_TYPE[kind]
    except KeyError:
        pass
    found = None
    for base in kind.__mro__:
        for wire in _BY_PATH.values():
            if wire.response_type is base:
                found = wire
                break
        if found is not None:
            break
    _BY_TYPE[kind] = found
    return found

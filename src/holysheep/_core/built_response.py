"""A read ``httpx.Response`` (or ``httpx2.Response``) built from a body that is decoded already.

The public constructor (``Response(content=...)``) reads its content through the decoders its
``Content-Encoding`` header names: given bytes that were gunzipped already, it would gunzip them again
(and fail). So the response is built without that header, then given it back (and no ``Content-Length``
the server did not send): its headers are the server's, its content the decoded body.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Protocol, TypeVar

__all__ = ["decoded_response"]


class _Built(Protocol):
    @property
    def headers(self) -> MutableMapping[str, str]: ...


R = TypeVar("R", bound=_Built)


def _pairs(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    multi = getattr(headers, "multi_items", None)  # httpx.Headers / httpx2.Headers: repeated names kept
    if callable(multi):
        return [(str(k), str(v)) for k, v in multi()]
    if isinstance(headers, Mapping):
        return [(str(k), str(v)) for k, v in headers.items()]
    return [(str(k), str(v)) for k, v in headers]


def decoded_response(cls: Callable[..., R], status_code: int, *,
                     headers: Mapping[str, str] | Iterable[tuple[str, str]], content: bytes,
                     request: object = None, extensions: Mapping[str, object] | None = None) -> R:
    """A ``cls`` (``httpx.Response`` or ``httpx2.Response``) whose ``content`` is ``content`` as given (not
    decoded again) and whose headers are ``headers`` as the server sent them (``Content-Encoding`` kept)."""
    pairs = _pairs(headers)
    encodings = [value for name, value in pairs if name.lower() == "content-encoding"]
    plain = [(name, value) for name, value in pairs if name.lower() != "content-encoding"]
    response = cls(status_code, headers=plain, content=content, request=request,
                   **({"extensions": dict(extensions)} if extensions is not None else {}))
    if not any(name.lower() == "content-length" for name, _ in plain):
        response.headers.pop("content-length", None)  # added by the constructor; the server sent none
    if encodings:
        response.headers["content-encoding"] = ", ".join(encodings)
    return response

"""Keep the key out of what leaves the SDK by a side door: exception chains (what an error may carry as its
``__cause__``), requests and headers attached to errors and raw responses, and the values a stream assembles
from its pieces (`scrub_assembled`: a key split across two deltas is whole only there)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar, overload

import httpx

from holysheep._core.keys import MIN_SECRET_LEN, mask_key, redact
from holysheep._egress import header_secret, scrub, scrub_json

__all__ = ["masked_request", "request_id_of", "scrub_assembled", "scrub_cause", "scrubbed_headers"]

_V = TypeVar("_V")


@overload
def scrub_assembled(value: str) -> str: ...
@overload
def scrub_assembled(value: dict[str, object]) -> dict[str, object]: ...
@overload
def scrub_assembled(value: list[_V]) -> list[_V]: ...
def scrub_assembled(value: str | dict[str, object] | list[_V]) -> str | dict[str, object] | list[_V]:
    """The egress scrubber over a value a stream joined from its pieces (a text, or a JSON-like body such as a
    folded completion), called by a stream's state wherever such a value leaves it: each piece was scrubbed
    alone, but a key split across two pieces is whole only in the joined value. Any wire format's stream state
    calls this one function."""
    if isinstance(value, str):
        return scrub(value)
    clean: dict[str, object] | list[_V] = scrub_json(value)  # the same shape, copied, its strings scrubbed
    return clean


def scrubbed_headers(headers: Mapping[str, str] | httpx.Headers) -> httpx.Headers:
    """``headers`` with every value scrubbed (a server may echo the key in one), and the value of a header that
    carries a key (``Authorization``, ``Api-Key``, ``X-Api-Key``, ``Proxy-Authorization``) masked whatever it is.
    Values are read and written as Latin-1 bytes, so a server's non-ASCII header survives unchanged."""
    raw = headers.raw if isinstance(headers, httpx.Headers) else httpx.Headers(list(headers.items())).raw
    out: list[tuple[bytes, bytes]] = []
    for name, data in raw:
        value = data.decode("latin-1")
        clean = value
        secret = header_secret(name.decode("latin-1"), value)
        if secret is not None:
            shown = mask_key(secret)
            clean = value[: len(value) - len(secret)] + shown if value.endswith(secret) else shown
        clean = scrub(clean)
        out.append((name, data if clean == value else clean.replace("…", "...").encode("latin-1", "replace")))
    return httpx.Headers(out)


def request_id_of(headers: Mapping[str, str], api_key: str | None) -> str | None:
    """The reply's ``x-request-id`` the same way on every transport: the first value when the server sent
    the header twice (httpx joins them as ``"A, B"``, aiohttp keeps the first), with the key masked even
    where a server glued it into the id (``req_<key>``), which the whole-token rule of `redact` would miss."""
    rid = headers.get("x-request-id")
    if rid is None:
        return None
    if ", " in rid:
        rid = rid.split(", ", 1)[0]
    if api_key and len(api_key) >= MIN_SECRET_LEN and api_key in rid:
        rid = rid.replace(api_key, mask_key(api_key))
    return redact(rid) if "hs_" in rid else rid


def masked_request(request: httpx.Request, api_key: str | None = None) -> httpx.Request:
    """A copy of ``request`` whose credentials show at most ``hs_…`` + the last 4 characters, however they were
    given (``Authorization``, ``Api-Key``, ``X-Api-Key``, ``Proxy-Authorization``; from ``api_key=``,
    ``default_headers`` or a call's ``extra_headers``), and whose other headers are scrubbed."""
    return httpx.Request(request.method, request.url, headers=scrubbed_headers(request.headers),
                         extensions=request.extensions)


def scrub_cause(exc: BaseException, api_key: str | None) -> BaseException | None:
    """A secret-free stand-in for ``exc`` to chain as ``__cause__``.

    httpx errors are copied with a redacted message and a masked ``request``, and without their own
    chain (an aiohttp error below may hold the raw headers). Other exceptions are chained only when
    their text holds no key and they chain nothing further.
    """
    text = str(exc)
    clean = redact(text, api_key)
    if isinstance(exc, httpx.HTTPError):
        try:
            copy = type(exc)(clean)
        except TypeError:  # an unusual constructor: fall back to the base class of its family
            copy = (httpx.TimeoutException if isinstance(exc, httpx.TimeoutException)
                    else httpx.TransportError)(clean)
        try:
            req: httpx.Request | None = exc.request  # raises RuntimeError when the error has none
        except RuntimeError:
            req = None
        if req is not None and isinstance(copy, httpx.RequestError):
            copy.request = masked_request(req, api_key)
        copy.__suppress_context__ = True
        return copy
    if clean != text or exc.__cause__ is not None or exc.__context__ is not None:
        return None
    return exc

"""Keep the key out of exception chains: what an error may carry as its ``__cause__``."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from holysheep._core.keys import MIN_SECRET_LEN, mask_key, redact

__all__ = ["masked_request", "request_id_of", "scrub_cause"]


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


def masked_request(request: httpx.Request, api_key: str | None) -> httpx.Request:
    """A copy of ``request`` whose credentials show at most ``hs_…`` + the last 4 characters."""
    headers = httpx.Headers(request.headers)
    for name in ("authorization", "proxy-authorization", "api-key", "x-api-key"):
        if name in headers:
            value = headers[name]
            scheme, _, secret = value.partition(" ") if name.endswith("authorization") else ("", "", value)
            shown = mask_key(secret or value).replace("…", "...")
            headers[name] = f"{scheme} {shown}" if scheme and secret else shown
    return httpx.Request(request.method, request.url, headers=headers, extensions=request.extensions)


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

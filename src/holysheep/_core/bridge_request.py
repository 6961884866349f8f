"""A request another HTTP client built (openai-python's, through ``as_openai()``) as a holysheep `RequestSpec`.

Pure: method, URL, headers, body and timeout in; the spec and whether its 2xx body is handed over unread out.
The client's own settings win where they belong to it: its key and ``Authorization`` header, its base URL (a
request for another origin is refused before any I/O: the key is only sent to the client's own server), its
``User-Agent``, retry headers and idempotency key. What the other client adds on purpose (its caller's
``extra_headers``, query parameters, a per-request timeout) travels as the call's options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from holysheep._core.config import ClientConfig
from holysheep._core.request import NO_OPTIONS, RequestOptions, RequestSpec

__all__ = ["bridged_spec", "reply_headers"]

Parser = Callable[[bytes], object]

_DROPPED = frozenset({
    "authorization", "api-key", "host", "content-length", "content-type", "connection", "accept-encoding",
    "transfer-encoding", "user-agent", "idempotency-key", "cookie", "accept",
})
"""Headers the other client writes that holysheep writes itself (or the transport owns)."""
_DROPPED_PREFIX = "x-stainless-"  # openai-python's runtime and retry-count headers: holysheep sends its own
_BODY_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
"""Headers of a reply that no longer describe its body once holysheep has decoded it."""


def _fail(message: str, field: str) -> Exception:
    from holysheep._exceptions import InvalidRequestError

    return InvalidRequestError(message, field=field)


def _path(config: ClientConfig, url: httpx.URL) -> str:
    base = str(config.base_url.copy_with(query=None))
    here = str(url.copy_with(query=None))
    if not here.startswith(base) or len(here) == len(base):
        raise _fail(f"as_openai() sends only to its client's base URL {base!r}; this request is for "
                    f"{here!r}. Build the holysheep client with that base_url instead.", "base_url")
    return here[len(base):]


def _body(content: bytes, headers: httpx.Headers) -> dict[str, object] | None:
    if not content:
        return None
    kind = headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind != "application/json":
        raise _fail(f"as_openai() sends JSON requests only, not {kind!r} (file uploads); use holysheep's own "
                    "methods or a plain openai client for this endpoint.", "content-type")
    from holysheep._core.json_check import load_json

    body = load_json(content)
    if not isinstance(body, dict):
        raise _fail(f"as_openai() sends JSON objects, got a JSON {type(body).__name__}.", "body")
    return body


def _options(config: ClientConfig, url: httpx.URL, headers: httpx.Headers,
             timeout: Mapping[str, float | None] | None) -> RequestOptions:
    extra = {name: value for name, value in headers.items()
             if name not in _DROPPED and not name.startswith(_DROPPED_PREFIX)}
    query = None
    if url.query:
        own = dict(config.base_url.params.multi_items())
        query = {k: v for k, v in url.params.multi_items() if own.get(k) != v} or None
    changed = timeout is not None and dict(timeout) != config.timeout.as_dict()
    if not extra and not query and not changed:
        return NO_OPTIONS
    from holysheep._core.config import check_headers

    options = RequestOptions(extra_headers=dict(check_headers("extra_headers", extra)) if extra else None,
                             extra_query=query)
    if changed and timeout is not None:
        options.timeout = httpx.Timeout(**timeout)
    return options


def bridged_spec(config: ClientConfig, method: str, url: httpx.URL, headers: httpx.Headers, content: bytes,
                 timeout: Mapping[str, float | None] | None, parser: Callable[[str], Parser]
                 ) -> tuple[RequestSpec, bool]:
    """The spec of a request built elsewhere, and whether its reply is handed over unread (``"stream": true``).

    ``parser(path)``: how the client parses that path's reply (what hooks and spans read). A chat completions
    stream is a holysheep stream (its events decoded as they pass, for the stream hooks); another endpoint's
    stream is a body handed over unread. Raises `InvalidRequestError` before any I/O."""
    path = _path(config, url)
    body = _body(content, headers)
    lazy = bool(body is not None and body.get("stream") is True)
    options = _options(config, url, headers, timeout)
    stream = lazy and path == "chat/completions"
    return RequestSpec(method, path, body, parser(path), stream, options), lazy


def reply_headers(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """A reply's headers for a body holysheep already decoded (no content encoding or length left)."""
    items = headers.multi_items() if isinstance(headers, httpx.Headers) else headers.items()
    return [(k, v) for k, v in items if k.lower() not in _BODY_HEADERS]

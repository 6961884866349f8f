"""Turning failed HTTP exchanges into holysheep exceptions (pure: no I/O)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

import httpx

from holysheep._core.built_response import decoded_response
from holysheep._core.json_check import load_json
from holysheep._core.keys import mask_key, redact, redact_value
from holysheep._core.scrub import masked_request, request_id_of, scrubbed_headers
from holysheep._egress import scrub_body
from holysheep._exceptions import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    APITLSError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    QuotaUnavailableError,
    RateLimitError,
    RedirectRefusedError,
    UnprocessableEntityError,
)

__all__ = ["error_from_status", "error_from_transport", "missing_version_hint", "redirect_loop_error",
           "sanitized_request", "server_message"]

_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}

_HINTS: dict[int, str] = {
    400: "Check the request parameters named in the message.",
    403: "This key may not use this model or endpoint; check its permissions in the dashboard.",
    404: "Check the model name (client.models.list() shows what is served) and the base_url.",
    409: "A conflicting request was in progress; it is safe to retry.",
    422: "The request was understood but rejected; check the parameter values.",
    429: "Rate limited: lower concurrency, or use client.chat.completions.batch(rpm=..., tpm=...).",
}


def sanitized_request(request: httpx.Request, api_key: str | None) -> httpx.Request:
    """A copy of ``request`` whose key-carrying headers show only ``hs_…`` + the last 4 characters (see
    `masked_request`)."""
    return masked_request(request, api_key)


def _parse_body(content: bytes) -> object:
    try:
        return load_json(content) if content else None
    except (ValueError, UnicodeDecodeError):
        return content.decode("utf-8", "replace")[:2000]


_VERSION_SEGMENT = re.compile(r"v\d+[a-z0-9]*", re.IGNORECASE)
# The endpoints the SDK calls, relative to the base URL; what precedes them in a URL is the base path.
_ENDPOINTS = ("chat/completions", "models", "quota")


def _fastapi_detail(detail: object) -> str | None:
    """FastAPI's ``detail``: a string, or a list of ``{"msg", "loc"}`` validation errors."""
    if isinstance(detail, str):
        return detail or None
    if isinstance(detail, list):
        items = []
        for item in detail[:5]:
            if isinstance(item, dict) and item.get("msg"):
                loc = item.get("loc")
                where = ".".join(str(p) for p in loc) if isinstance(loc, list | tuple) and loc else ""
                items.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
            elif isinstance(item, str):
                items.append(item)
        return "; ".join(items) or None
    if isinstance(detail, dict):
        return _fastapi_detail(detail.get("msg") or detail.get("message"))
    return None


def server_message(body: object) -> str | None:
    """The server's own words from an error body, whatever the server's style.

    In order: OpenAI's ``{"error": {"message"}}``; FastAPI's ``{"detail": ...}`` (a string, or a list of
    ``{"msg", "loc"}``); ``{"error": "text"}``; ``{"message": "text"}``; a non-JSON body's first 300 characters.
    """
    if isinstance(body, str):
        return body.strip()[:300] or None
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]:
        return str(err["message"])
    detail = _fastapi_detail(body.get("detail"))
    if detail:
        return detail
    if isinstance(err, str) and err:
        return err
    message = body.get("message")
    if isinstance(message, str) and message:
        return message
    return None


def missing_version_hint(url: httpx.URL) -> str | None:
    """For a 404: "did you mean .../v1?" when the base URL before the endpoint has no version segment."""
    path = url.path.rstrip("/")
    for endpoint in _ENDPOINTS:
        if path == "/" + endpoint or path.endswith("/" + endpoint):
            base_path = path[: -len(endpoint)].rstrip("/")
            break
    else:
        return None
    last = base_path.rsplit("/", 1)[-1]
    if _VERSION_SEGMENT.fullmatch(last):
        return None
    base = str(url.copy_with(raw_path=(base_path or "").encode() or b"/", query=None)).rstrip("/")
    return (f"The base_url ({base}) does not end in a version segment and the server has no such path: "
            f"did you mean {base}/v1?")


def error_from_status(
    response: httpx.Response, *, api_key: str | None, retries_taken: int, retry_after: float | None,
    error_fields: Callable[[object], Mapping[str, object] | None] | None = None,
) -> APIStatusError:
    """The typed exception for an HTTP error response (body already read). ``error_fields``: the request's wire
    format's reading of its error body (`WireFormat.error_fields`); OpenAI's ``{"error": {...}}`` without it."""
    status = response.status_code
    body = _parse_body(response.content)
    if error_fields is None:
        err_obj = body.get("error") if isinstance(body, dict) else None
        detail: Mapping[str, object] = err_obj if isinstance(err_obj, dict) else {}
    else:
        detail = error_fields(body) or {}
    server_msg = server_message(body)
    if error_fields is not None and isinstance(detail.get("message"), str) and detail["message"]:
        server_msg = str(detail["message"])
    err_type = detail.get("type")
    err_code = detail.get("code")
    err_param = detail.get("param")
    request_id = request_id_of(response.headers, api_key)
    if status == 401:
        hint = (f"The API key ({mask_key(api_key)}) was rejected: check that HOLYSHEEP_API_KEY (or api_key=) "
                "holds a current key.")
    elif status >= 500:
        hint = "The server failed; try again later, or configure a fallback endpoint."
    elif status == 404:
        hint = _not_found_hint(response.request, server_msg)
    else:
        hint = _HINTS.get(status, "")
    parts = [f"HTTP {status} {response.reason_phrase}".rstrip()]
    if server_msg:
        parts.append(f": {server_msg}")
    if err_type or err_code:
        parts.append(f" (type={err_type}, code={err_code})")
    if retries_taken:
        parts.append(f" after {retries_taken} retr{'y' if retries_taken == 1 else 'ies'}")
    if request_id:
        parts.append(f" [request_id={request_id}]")
    if hint:
        parts.append(f". {hint}")
    message = redact("".join(parts), api_key)
    body = redact_value(body, api_key)  # strings masked in place; the structure is kept
    if isinstance(body, dict) and "error" in body:  # openai-python's e.body: the error object itself
        body = body["error"]
    cls = (QuotaUnavailableError if status == 404 and _is_quota_path(response.request.url)
           else _STATUS_CLASSES.get(status)) or (InternalServerError if status >= 500 else APIStatusError)
    request = sanitized_request(response.request, api_key)
    response.request = request
    response.headers = scrubbed_headers(response.headers)  # a server may echo a key in a header too
    raw = response.content
    clean = scrub_body(raw)  # every remembered key, however supplied, also spelled with JSON escapes
    if b"hs_" in clean or (api_key and api_key.encode("utf-8", "replace") in clean):  # a short key, whole-token
        clean = redact(clean.decode("utf-8", "replace"), api_key).encode()
    if clean is not raw:  # the server echoed a key: the response is rebuilt around the masked body
        response = decoded_response(httpx.Response, status, headers=response.headers, request=request,
                                    extensions=response.extensions, content=clean)
    err = cls(
        message,
        status_code=status,
        request_id=request_id,
        response=response,
        request=request,
        body=body,
        type=err_type if isinstance(err_type, str) else None,
        code=str(err_code) if err_code is not None else None,
        param=redact(err_param, api_key) if isinstance(err_param, str) else None,
    )
    err.retry_after = retry_after
    err.retries_taken = retries_taken
    return err


def _is_quota_path(url: httpx.URL) -> bool:
    return url.path.rstrip("/").endswith("/quota")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*[A-Za-z0-9]")


def _requested_model(request: httpx.Request) -> str | None:
    try:
        body = json.loads(request.content) if request.content else None
    except (ValueError, UnicodeDecodeError, httpx.RequestNotRead):
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) and model else None


def nearest_model_hint(model: str | None, server_msg: str | None) -> str | None:
    """"Did you mean 'x'?" when the server's message lists the names it serves and one is close to ``model``."""
    if not model or not server_msg:
        return None
    import difflib

    names = {n for n in _NAME.findall(server_msg) if n != model and any(c in n for c in "-.0123456789")}
    close = difflib.get_close_matches(model, sorted(names), n=1, cutoff=0.6)
    return f"Did you mean {close[0]!r}?" if close else None


def _not_found_hint(request: httpx.Request, server_msg: str | None) -> str:
    url = request.url
    nearest = nearest_model_hint(_requested_model(request), server_msg)
    if nearest is not None:
        return nearest
    version = missing_version_hint(url)
    if version is not None:
        return version
    if _is_quota_path(url):
        return ("This server has no quota endpoint (GET /quota answered 404): self-hosted and most "
                "OpenAI-compatible servers have none. Skip the quota check (batch(check_quota=False)).")
    if url.path.rstrip("/").endswith("/models"):
        return "The server has no models endpoint at this base_url; check the base_url."
    return _HINTS[404]


def tls_failure(exc: BaseException) -> BaseException | None:
    """The ``ssl`` error behind a transport failure (httpx and aiohttp chain it differently), or None."""
    import ssl

    stack: list[object] = [exc]
    seen: set[int] = set()
    while stack:
        error = stack.pop()
        if not isinstance(error, BaseException) or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, (ssl.SSLError, ssl.CertificateError)):
            return error
        stack += [error.__cause__, error.__context__, getattr(error, "os_error", None),
                  getattr(error, "certificate_error", None), *error.args]
    return None


def _tls_error(failure: BaseException, where: str, ca_source: str | None, api_key: str | None,
               req: httpx.Request | None) -> APITLSError:
    reason = getattr(failure, "verify_message", None) or getattr(failure, "reason", None) or str(failure)
    reason = redact(str(reason), api_key)
    store = f"the CA store in use: {ca_source}" if ca_source else "the CA store in use: the http_client's own"
    if "ALERT" in str(getattr(failure, "reason", "")).upper() or "alert" in str(failure).lower():
        return APITLSError(
            f"TLS error{where}: the server refused the handshake with a TLS alert ({reason}). It may require a "
            f"client certificate: pass cert='client.pem' (or (cert_file, key_file)). Not retried; {store}.",
            request=req)
    hint = ("point the SDK at it: set SSL_CERT_FILE=/path/to/ca.pem (or SSL_CERT_DIR), or pass "
            "verify='/path/to/ca.pem'") if not (ca_source or "").startswith("the http_client") else \
        "give the http_client you passed in verify=ssl.create_default_context(cafile='/path/to/ca.pem')"
    return APITLSError(
        f"TLS error{where}: certificate verify failed ({reason}); {store}. If the server uses a private or "
        f"corporate CA, {hint}. Not retried.", request=req)


def error_from_transport(
    exc: Exception, request: httpx.Request | None, *, api_key: str | None, retries_taken: int,
    ca_source: str | None = None,
) -> APIConnectionError:
    """The typed exception for a failure with no usable response (timeout, refused, reset, TLS); ``ca_source``
    names the trust store, for a TLS failure's message."""
    req = sanitized_request(request, api_key) if request is not None else None
    where = f" ({req.method} {req.url})" if req is not None else ""
    tried = f" after {retries_taken} retr{'y' if retries_taken == 1 else 'ies'}" if retries_taken else ""
    failure = tls_failure(exc)
    if failure is not None:
        return _tls_error(failure, where, ca_source, api_key, req)
    detail = redact(str(exc), api_key) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(
            f"Request timed out{where}{tried}: {detail}. Raise timeout= (seconds) or check the server's load.",
            request=req,
        )
    return APIConnectionError(
        f"Connection error{where}{tried}: {detail}. Check the base_url, your network, and that the server is up.",
        request=req,
    )


def redirect_loop_error(exc: Exception, request: httpx.Request | None, *, api_key: str | None) -> APIError | None:
    """A `RedirectRefusedError` (never retried: the next attempt meets the same loop) when ``exc`` is a
    redirect loop (httpx's ``TooManyRedirects``, or the aiohttp backend's); else ``None``."""
    if not isinstance(exc, httpx.TooManyRedirects):
        return None
    req = sanitized_request(request, api_key) if request is not None else None
    where = f" ({req.method} {req.url})" if req is not None else ""
    return RedirectRefusedError(
        f"Redirect loop{where}: {redact(str(exc), api_key) or 'too many redirects'}. Not retried: point base_url "
        f"at the final URL.", request=req)

"""Turning failed HTTP exchanges into holysheep exceptions (pure: no I/O)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from ._exceptions import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._keys import mask_key, redact, redact_value

__all__ = ["error_from_transport", "error_from_status", "sanitized_request"]

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
    """A copy of ``request`` whose Authorization header shows only ``hs_…`` + the last 4 characters."""
    headers = httpx.Headers(request.headers)
    if "authorization" in headers:
        headers["authorization"] = "Bearer " + mask_key(api_key).replace("…", "...")
    return httpx.Request(request.method, request.url, headers=headers, extensions=request.extensions)


def _parse_body(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except (ValueError, UnicodeDecodeError):
        return content.decode("utf-8", "replace")[:2000]


def error_from_status(
    response: httpx.Response, *, api_key: str | None, retries_taken: int, retry_after: float | None
) -> APIStatusError:
    """The typed exception for an HTTP error response (body already read)."""
    status = response.status_code
    body = _parse_body(response.content)
    err_obj = body.get("error") if isinstance(body, dict) else None
    if isinstance(err_obj, str):
        err_obj = {"message": err_obj}
    detail: dict[str, Any] = err_obj if isinstance(err_obj, dict) else {}
    server_msg = detail.get("message") or (body.get("message") if isinstance(body, dict) else None)
    if server_msg is None and isinstance(body, str):
        server_msg = body[:300]
    err_type = detail.get("type")
    err_code = detail.get("code")
    request_id = response.headers.get("x-request-id")
    if status == 401:
        hint = (f"The API key ({mask_key(api_key)}) was rejected: check that HOLYSHEEP_API_KEY (or api_key=) "
                "holds a current key.")
    elif status >= 500:
        hint = "The server failed; try again later, or configure a fallback endpoint."
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
    cls = _STATUS_CLASSES.get(status) or (InternalServerError if status >= 500 else APIStatusError)
    request = sanitized_request(response.request, api_key)
    response.request = request
    raw = response.content
    if b"hs_" in raw or (api_key and api_key.encode("utf-8", "replace") in raw):  # the server echoed a key
        response._content = redact(raw.decode("utf-8", "replace"), api_key).encode()
    err = cls(
        message,
        status_code=status,
        request_id=request_id,
        response=response,
        request=request,
        body=body,
        type=err_type if isinstance(err_type, str) else None,
        code=str(err_code) if err_code is not None else None,
    )
    err.retry_after = retry_after
    err.retries_taken = retries_taken
    return err


def error_from_transport(
    exc: Exception, request: httpx.Request | None, *, api_key: str | None, retries_taken: int
) -> APIConnectionError:
    """The typed exception for a failure with no usable response (timeout, refused, reset)."""
    req = sanitized_request(request, api_key) if request is not None else None
    where = f" ({req.method} {req.url})" if req is not None else ""
    tried = f" after {retries_taken} retr{'y' if retries_taken == 1 else 'ies'}" if retries_taken else ""
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

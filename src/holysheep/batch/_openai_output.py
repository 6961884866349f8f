"""Result lines in the OpenAI Batch API's output format (``output_format="openai"``).

Each line is ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``, as in
the output file of an OpenAI batch, so readers of those files work unchanged. As there, an HTTP error is
a ``response`` with its status and error body (``error`` null); a failure with no HTTP reply (connection,
timeout, invalid line) has ``response`` null and ``error`` ``{"code", "message"}``. An HTTP error's body is
the server's own error object (message, type, param, code), scrubbed of the key; the SDK's explanation
goes to the run's report (``JsonlReport.errors``) and the command's stderr instead. One extra key,
``request_hash``, lets ``--resume`` check the output belongs to the input (readers ignore it).
"""

from __future__ import annotations

import json
import os
from typing import Any

from holysheep._core.keys import redact_value
from holysheep._egress import scrub
from holysheep._exceptions import APIError, APIStatusError

__all__ = ["FORMATS", "check_format", "error_line", "server_error", "success_line"]

FORMATS = ("holysheep", "openai")


def check_format(value: object) -> str:
    """``output_format`` is one of ``FORMATS`` (a typed error before any I/O)."""
    if value not in FORMATS:
        from holysheep._exceptions import InvalidRequestError

        raise InvalidRequestError(f"output_format must be 'holysheep' or 'openai', got {value!r}.",
                                  field="output_format")
    return str(value)


def _id() -> str:
    return "batch_req_" + os.urandom(12).hex()


def _head(cid: str, digest: str | None) -> str:
    return '{"id":"' + _id() + '","custom_id":' + json.dumps(cid) + ',"request_hash":' + json.dumps(digest)


def success_line(cid: str, digest: str | None, request_id: str | None, body_json: str) -> str:
    """The line of a successful result (``body_json``: the completion as JSON). All but the head (``id``,
    ``custom_id``, ``request_hash``: the caller's, which ``--resume`` matches) passes the egress scrubber."""
    return (_head(cid, digest) + scrub(',"response":{"status_code":200,"request_id":' + json.dumps(request_id)
                                       + ',"body":' + body_json + '},"error":null}') + "\n")


def server_error(error: APIStatusError, kind: str) -> dict[str, Any]:
    """The error object the server sent, as OpenAI writes it: ``{"message", "type", "param", "code"}`` with
    the server's own values (its ``body``, already scrubbed of the key when the error was made, is scrubbed
    again here); the SDK's message only when the server sent none."""
    body = error.body
    inner = body.get("error") if isinstance(body, dict) else None
    if isinstance(inner, str):  # {"error": "text"}
        inner = {"message": inner}
    elif not isinstance(inner, dict):
        inner = body if isinstance(body, dict) and isinstance(body.get("message"), str) else {}
    message = inner.get("message")
    found = {"message": message if isinstance(message, str) else error.message,
             "type": inner.get("type", error.type or kind), "param": inner.get("param"),
             "code": inner.get("code", error.code)}
    scrubbed: dict[str, object] = redact_value(found)
    return scrubbed


def error_line(cid: str, digest: str | None, error: BaseException, kind: str) -> str:
    """The line of a failed result: an HTTP error as a response carrying the server's own error object (as
    OpenAI writes it), anything else as an error object."""
    if isinstance(error, APIStatusError):
        inner = server_error(error, kind)
        response = {"status_code": error.status_code, "request_id": error.request_id, "body": {"error": inner}}
        return _head(cid, digest) + scrub(',"response":' + json.dumps(response) + ',"error":null}') + "\n"
    message = error.message if isinstance(error, APIError) else str(error)
    return (_head(cid, digest) + scrub(',"response":null,"error":' + json.dumps({"code": kind, "message": message}))
            + "}\n")

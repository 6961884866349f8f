"""Result lines in the OpenAI Batch API's output format (``output_format="openai"``).

Each line is ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``, as in
the output file of an OpenAI batch, so readers of those files work unchanged. As there, an HTTP error is
a ``response`` with its status and error body (``error`` null); a failure with no HTTP reply (connection,
timeout, invalid line) has ``response`` null and ``error`` ``{"code", "message"}``. One extra key,
``request_hash``, lets ``--resume`` check the output belongs to the input (readers ignore it).
"""

from __future__ import annotations

import json
import os
from typing import Any

from holysheep._exceptions import APIError, APIStatusError

__all__ = ["FORMATS", "check_format", "error_line", "success_line"]

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
    """The line of a successful result (``body_json``: the completion as JSON)."""
    return (_head(cid, digest) + ',"response":{"status_code":200,"request_id":' + json.dumps(request_id)
            + ',"body":' + body_json + '},"error":null}\n')


def error_line(cid: str, digest: str | None, error: BaseException, kind: str) -> str:
    """The line of a failed result: an HTTP error as a response, anything else as an error object."""
    if isinstance(error, APIStatusError):
        inner: dict[str, Any] = {"message": error.message, "type": error.type or kind,
                                 "param": getattr(error, "param", None), "code": error.code}
        response = {"status_code": error.status_code, "request_id": error.request_id, "body": {"error": inner}}
        return _head(cid, digest) + ',"response":' + json.dumps(response) + ',"error":null}\n'
    message = error.message if isinstance(error, APIError) else str(error)
    return _head(cid, digest) + ',"response":null,"error":' + json.dumps({"code": kind, "message": message}) + "}\n"

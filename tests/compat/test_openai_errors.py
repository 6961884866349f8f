"""The exception a status error raises has openai-python's shape: same class name, ``body`` (the error object),
``code``, ``type``, ``param``, ``status_code`` and ``request_id``, side by side against the same FakeServer error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

import holysheep
from holysheep.testing import FakeServer, Response

ERROR = {"error": {"message": "max_tokens is too large", "type": "invalid_request_error",
                   "param": "max_tokens", "code": "integer_above_max_value"}}
MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        srv.on("POST", "/chat/completions", lambda rec: Response(400, ERROR))
        srv.on("POST", "/embeddings", lambda rec: Response(500, "upstream exploded"))
        yield srv


def _raise(package: Any, server: FakeServer, call: str) -> Any:
    cls = package.OpenAI if package is openai else package.Client
    with cls(base_url=server.url, api_key=server.api_key, max_retries=0) as client, \
            pytest.raises(package.APIStatusError) as info:
        if call == "chat":
            client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, max_tokens=10**9)
        else:
            client.embeddings.create(model="text-embedding-3-small", input="x")
    return info.value


def _shape(err: Any) -> dict[str, Any]:
    return {"class": type(err).__name__, "status": err.status_code, "body": err.body, "code": err.code,
            "type": err.type, "param": err.param, "request_id": err.request_id[:4], "whole": err.response.json()
            if err.response.headers.get("content-type", "").startswith("application/json") else err.response.text}


@pytest.mark.parametrize("call", ["chat", "embeddings"])
def test_status_error_has_openais_fields(server: FakeServer, call: str) -> None:
    theirs = _shape(_raise(openai, server, call))
    ours = _shape(_raise(holysheep, server, call))
    assert ours == theirs
    if call == "chat":
        assert ours["body"] == ERROR["error"] and ours["whole"] == ERROR and ours["param"] == "max_tokens"
        assert ours["class"] == "BadRequestError"
    else:
        assert ours["body"] == "upstream exploded" and ours["param"] is None and ours["class"] == "InternalServerError"


def test_the_rich_message_stays_in_str(server: FakeServer) -> None:
    err = _raise(holysheep, server, "chat")
    text = str(err)
    assert text.startswith("HTTP 400 Bad Request: max_tokens is too large")
    assert f"[request_id={err.request_id}]" in text and "code=integer_above_max_value" in text
    assert err.body["message"] == "max_tokens is too large"  # openai's e.body["message"]


def test_batch_output_line_keeps_the_errors_param() -> None:
    """An OpenAI Batch output line for an HTTP error carries the server's own error object (its ``message``,
    not the SDK's, and its ``param``), as OpenAI's do."""
    import json

    from holysheep.batch._openai_output import error_line

    err = holysheep.BadRequestError("HTTP 400: too large", status_code=400, request_id="req_1", body=ERROR["error"],
                                    type="invalid_request_error", code="integer_above_max_value", param="max_tokens")
    line = json.loads(error_line("item-1", None, err, "api_error"))
    assert line["response"]["body"]["error"] == {"message": "max_tokens is too large", "type": "invalid_request_error",
                                                 "param": "max_tokens", "code": "integer_above_max_value"}

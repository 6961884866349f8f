"""Servers that lie (issue 31, items 1, 3 and 6), on every transport.

1. A 200 that carries no answer (``{}``, ``{"error": ...}``, ``{"choices": []}``) is a typed, retried
   `APIResponseValidationError` with the scrubbed body; in a batch and in JSONL it is a failure.
3. A 401 is never retried, whatever ``x-should-retry`` says.
6. A ``Retry-After`` HTTP date is read against the reply's own ``Date`` header (a server whose clock is
   10 minutes fast asking for 1 s is waited 1 s, not 601 s).
"""

from __future__ import annotations

import asyncio
import json
import time
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from holysheep import APIResponseValidationError, AsyncClient, AuthenticationError, Client
from holysheep.batch import run_jsonl

from .conftest import KEY, MESSAGES, chat, make_client
from .hostile import HostileServer, Req, fixed

COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()
ANSWERLESS = {
    "empty object": b"{}",
    "error object": json.dumps({"error": {"message": f"upstream failed for {KEY}", "type": "server_error"}}).encode(),
    "no choices": json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                              "choices": []}).encode(),
}


def _serve(body: bytes, status: int = 200, **headers: str) -> Any:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(status, body, **headers))

    return scenario


# --- 1. an answerless 200 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(ANSWERLESS))
def test_answerless_200_is_a_typed_retried_error_with_the_scrubbed_body(kind: str, shape: str) -> None:
    with HostileServer(_serve(ANSWERLESS[shape])) as srv:
        with pytest.raises(APIResponseValidationError) as info:
            chat(kind, srv.url, client_kw={"max_retries": 2, "initial_retry_delay": 0.0})
        assert len(srv.requests) == 3  # retried as transient: 1 + max_retries
    err = info.value
    assert err.status_code == 200
    assert "no answer" in str(err)
    assert isinstance(err.body, str) and err.body.startswith("{")
    assert KEY not in repr(err.body) and KEY not in str(err)
    if shape == "error object":
        assert "hs_…WXYZ" in err.body and "upstream failed" in str(err)


class Answer(BaseModel):
    answer: str


def test_answerless_200_fails_parse(kind: str) -> None:
    with HostileServer(_serve(ANSWERLESS["no choices"])) as srv:
        if kind == "sync":
            with make_client(kind, srv.url) as client, pytest.raises(APIResponseValidationError):
                client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Answer)
        else:
            async def go() -> None:
                async with make_client(kind, srv.url) as client:
                    await client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Answer)

            with pytest.raises(APIResponseValidationError):
                asyncio.run(go())
        assert len(srv.requests) == 1


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
def test_answerless_200_is_a_failure_in_a_batch(backend: str) -> None:
    answers = iter([COMPLETION, b"{}", COMPLETION, b'{"choices": []}', COMPLETION])

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, next(answers, b"{}")))

    async def go(url: str) -> Any:
        async with AsyncClient(api_key=KEY, base_url=url, http_backend=backend, max_retries=0) as client:
            return await client.chat.completions.batch([MESSAGES] * 5, model="m", check_quota=False,
                                                       concurrency=1, max_retries=0)  # else retried (issue 25)

    with HostileServer(scenario) as srv:
        results = asyncio.run(go(srv.url))
    assert [r.ok for r in results] == [True, False, True, False, True]
    assert all(isinstance(r.error, APIResponseValidationError) for r in results if not r.ok)
    assert results.stats.failed == 2


def test_answerless_200_in_jsonl_is_an_error_line_and_resume_sends_it_again(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": c, "messages": MESSAGES}) + "\n" for c in "abc"))
    dst = tmp_path / "out.jsonl"
    served = {"n": 0}

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        served["n"] += 1
        w.write(fixed(200, b"{}" if served["n"] == 2 else COMPLETION))

    with HostileServer(scenario) as srv:
        with Client(api_key=KEY, base_url=srv.url, max_retries=0) as client:
            report = run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False,
                               max_retries=0)  # the batch's own policy would retry the answerless reply
            rows = [json.loads(line) for line in dst.read_text().splitlines()]
            assert ["error" not in r for r in rows] == [True, False, True]
            assert rows[1]["error"]["type"] == "invalid_response"
            assert report.summary is not None and report.summary.failed == 1
            run_jsonl(client, src, dst, model="m", concurrency=1, check_quota=False, resume=True)
        assert len(srv.requests) == 4  # the answerless one was sent again
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert ["error" not in r for r in rows] == [True, True, True]


# --- 3. a 401 is never retried ------------------------------------------------------------------------------


def test_401_is_never_retried_even_with_x_should_retry_true(kind: str) -> None:
    body = json.dumps({"error": {"message": "bad key", "type": "invalid_request_error"}}).encode()
    with HostileServer(_serve(body, 401, x_should_retry="true")) as srv:
        with pytest.raises(AuthenticationError):
            chat(kind, srv.url, client_kw={"max_retries": 3, "initial_retry_delay": 0.0})
        assert len(srv.requests) == 1


# --- 6. Retry-After as an HTTP date from a server whose clock is 10 minutes fast -------------------------


def test_retry_after_date_is_read_against_the_replys_date_header(kind: str) -> None:
    skew = 600.0
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
    sent: list[float] = []

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        sent.append(time.monotonic())
        if len(sent) == 1:
            server_now = time.time() + skew
            w.write(fixed(429, body, date=formatdate(server_now, usegmt=True),
                          retry_after=formatdate(server_now + 1, usegmt=True)))
        else:
            w.write(fixed(200, COMPLETION))

    with HostileServer(scenario) as srv:
        result = chat(kind, srv.url, client_kw={"max_retries": 1})
    assert result.choices[0].message.content == "ok"
    assert len(sent) == 2
    assert 0.5 <= sent[1] - sent[0] < 5.0  # the 1 s the server asked for (HTTP dates are whole seconds)


def test_retry_after_date_is_capped_and_a_garbage_date_header_falls_back_to_the_local_clock() -> None:
    from holysheep._core.retry import parse_retry_after

    now = 1_700_000_000.0
    server = now + 600
    # the reply's own Date header decides, whatever the local clock says
    assert parse_retry_after({"retry-after": formatdate(server + 2, usegmt=True),
                              "date": formatdate(server, usegmt=True)}, now=lambda: now) == 2.0
    # no usable Date header: the local clock (as before)
    assert parse_retry_after({"retry-after": formatdate(now + 3, usegmt=True), "date": "yesterday"},
                             now=lambda: now) == 3.0
    # a date decades ahead is capped (one day), not an overflow or a week-long wait
    assert parse_retry_after({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}, now=lambda: now) == 86400.0

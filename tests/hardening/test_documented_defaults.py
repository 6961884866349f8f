"""The retry table of docs/errors.md and the promises of docs/security.md, with the defaults: a client built
with nothing but a key and a base URL (``max_retries=2``, backoff 0.5 s doubling, ``max_retry_after=60``),
on every transport, against a server on 127.0.0.1. The sleeps are recorded, not slept, and the backoff's
jitter is drawn as 0, so every schedule is exact."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import os
import subprocess
import sys
import zlib
from typing import Any

import httpx
import pytest

import holysheep
from holysheep import (
    APIResponseValidationError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RedirectRefusedError,
    ResponseTooLargeError,
    StreamInterruptedError,
    UnprocessableEntityError,
)
from holysheep._clients import async_client, client
from holysheep._core import call, retry
from holysheep._core.config import DEFAULT_LIMITS

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, fixed, head

ERROR = json.dumps({"error": {"message": "no", "type": "invalid_request_error"}}).encode()


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays the client asked to sleep, in order (none is slept); backoff jitter drawn as 0."""
    delays: list[float] = []

    async def fake_async_sleep(seconds: float) -> None:
        delays.append(seconds)

    monkeypatch.setattr(client.time, "sleep", delays.append)
    monkeypatch.setattr(async_client, "_sleep", fake_async_sleep)
    monkeypatch.setattr(call, "backoff_delay", lambda policy, n, rand: retry.backoff_delay(policy, n, lambda: 0.0))
    return delays


def default_chat(kind: str, url: str) -> Any:
    """One create() on a client with every default but the key and the base URL."""
    if kind == "sync":
        with holysheep.Client(api_key=KEY, base_url=url) as c:
            return c.chat.completions.create(model="m", messages=MESSAGES)

    async def go() -> Any:
        backend = "httpx" if kind == "httpx" else "aiohttp"
        async with holysheep.AsyncClient(api_key=KEY, base_url=url, http_backend=backend) as c:
            return await c.chat.completions.create(model="m", messages=MESSAGES)

    return asyncio.run(go())


def serve(status: int, body: bytes = ERROR, **headers: str) -> Any:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(status, body, **headers))

    return scenario


@pytest.mark.parametrize(("status", "cls"), [(400, BadRequestError), (401, AuthenticationError),
                                             (403, PermissionDeniedError), (404, NotFoundError),
                                             (422, UnprocessableEntityError), (413, APIStatusError)])
def test_a_4xx_is_one_request_then_the_typed_error(kind: str, slept: list[float], status: int,
                                                   cls: type[Exception]) -> None:
    with HostileServer(serve(status)) as srv, pytest.raises(cls) as info:
        default_chat(kind, srv.url)
    assert len(srv.requests) == 1 and slept == []
    assert isinstance(info.value, APIStatusError) and info.value.status_code == status
    assert info.value.retries_taken == 0


@pytest.mark.parametrize(("status", "cls"), [(408, APIStatusError), (409, ConflictError), (429, RateLimitError),
                                             (500, InternalServerError), (503, InternalServerError)])
def test_a_retryable_status_is_sent_three_times_on_the_default_backoff(kind: str, slept: list[float], status: int,
                                                                       cls: type[Exception]) -> None:
    with HostileServer(serve(status)) as srv, pytest.raises(cls) as info:
        default_chat(kind, srv.url)
    assert len(srv.requests) == 3  # max_retries=2
    assert slept == [0.5, 1.0]  # initial_retry_delay 0.5 s, doubling
    assert [r.headers["x-holysheep-retry-count"] for r in srv.requests] == ["0", "1", "2"]
    assert len({r.headers["idempotency-key"] for r in srv.requests}) == 1
    assert isinstance(info.value, APIStatusError) and info.value.retries_taken == 2


def test_a_401_is_never_retried_even_when_the_server_says_so(kind: str, slept: list[float]) -> None:
    with HostileServer(serve(401, x_should_retry="true")) as srv, pytest.raises(AuthenticationError):
        default_chat(kind, srv.url)
    assert len(srv.requests) == 1 and slept == []


def test_an_answerless_200_is_retried_then_raised(kind: str, slept: list[float]) -> None:
    with HostileServer(serve(200, b'{"choices": []}')) as srv, pytest.raises(APIResponseValidationError):
        default_chat(kind, srv.url)
    assert len(srv.requests) == 3 and slept == [0.5, 1.0]


def test_retry_after_is_waited_up_to_sixty_seconds(kind: str, slept: list[float]) -> None:
    with HostileServer(serve(429, retry_after="60")) as srv, pytest.raises(RateLimitError):
        default_chat(kind, srv.url)
    assert len(srv.requests) == 3 and slept == [60.0, 60.0]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_every_retried_status_honours_its_retry_after(kind: str, slept: list[float], status: int) -> None:
    """One table decides both: a status that is retried waits the server's Retry-After, not the backoff."""
    with HostileServer(serve(status, retry_after="7")) as srv, pytest.raises(APIStatusError) as info:
        default_chat(kind, srv.url)
    assert len(srv.requests) == 3 and slept == [7.0, 7.0]
    assert info.value.retry_after == 7.0


def test_a_longer_retry_after_is_raised_not_waited(kind: str, slept: list[float]) -> None:
    with HostileServer(serve(429, retry_after="61")) as srv, pytest.raises(RateLimitError) as info:
        default_chat(kind, srv.url)
    assert len(srv.requests) == 1 and slept == []
    assert info.value.retry_after == 61.0 and info.value.retries_taken == 0


def test_a_redirect_loop_is_followed_20_or_10_times_once_and_not_retried(kind: str, slept: list[float]) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(307, b"", location=req.path))  # same origin: followed, until the limit

    with HostileServer(scenario) as srv, pytest.raises(RedirectRefusedError) as info:
        default_chat(kind, srv.url)
    assert len(srv.requests) == (11 if kind == "aiohttp" else 21) and slept == []  # 1 + the redirects followed
    assert "Redirect loop" in str(info.value) and "base_url" in str(info.value) and KEY not in str(info.value)


def default_stream(kind: str, url: str) -> list[Any]:
    """One create(stream=True) on a client with every default but the key and the base URL, read to the end."""
    if kind == "sync":
        with holysheep.Client(api_key=KEY, base_url=url) as c, \
                c.chat.completions.create(model="m", messages=MESSAGES, stream=True) as s:
            return list(s)

    async def go() -> list[Any]:
        backend = "httpx" if kind == "httpx" else "aiohttp"
        async with holysheep.AsyncClient(api_key=KEY, base_url=url, http_backend=backend) as c:
            s = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async with s:
                return [chunk async for chunk in s]

    return asyncio.run(go())


CHUNK = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})


def test_a_stream_cut_after_its_first_event_is_one_request_and_keeps_the_partial_text(
        kind: str, slept: list[float]) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream") + f"data: {CHUNK}\n\n".encode())
        await w.drain()
        w.transport.abort()  # reset mid-stream

    with HostileServer(scenario) as srv, pytest.raises(StreamInterruptedError) as info:
        default_stream(kind, srv.url)
    assert len(srv.requests) == 1 and slept == []  # part of the answer was seen: never retried
    assert info.value.partial_text == "Hel"


# --- the size limits of docs/errors.md#limits at their defaults (64 MiB body, 16 MiB SSE line) -------------


def _gzip_zeros(n: int) -> bytes:
    comp = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    return b"".join(comp.compress(block) for _ in range(n >> 20)) + comp.flush()


@functools.cache
def bomb_65_mib() -> bytes:
    return _gzip_zeros(65 << 20)  # ~65 KB on the wire


@functools.cache
def sse_bomb_17_mib() -> bytes:
    return gzip.compress(b"data: " + b"z" * (17 << 20), compresslevel=1)


def test_a_body_past_64_mib_is_refused_once(kind: str, slept: list[float]) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, bomb_65_mib(), content_encoding="gzip"))

    with HostileServer(scenario) as srv, pytest.raises(ResponseTooLargeError) as info:
        default_chat(kind, srv.url)
    assert info.value.limit == 64 << 20 and len(srv.requests) == 1 and slept == []  # not retried


def test_an_sse_line_past_16_mib_is_refused_once(kind: str, slept: list[float]) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream", content_encoding="gzip") + sse_bomb_17_mib())

    with HostileServer(scenario) as srv, pytest.raises(ResponseTooLargeError) as info:
        default_stream(kind, srv.url)
    assert info.value.limit == 16 << 20 and len(srv.requests) == 1 and slept == []


# --- docs/configuration.md's table of defaults ------------------------------------------------------------


def test_the_configuration_table_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLYSHEEP_BASE_URL", raising=False)
    monkeypatch.setenv("HOLYSHEEP_API_KEY", KEY)
    for c in (holysheep.Client(), holysheep.AsyncClient()):
        cfg = c.config
        assert str(cfg.base_url).rstrip("/") == "https://api.holysheep.ai/v1" and cfg.api_key.reveal() == KEY
        assert cfg.timeout == httpx.Timeout(600, connect=5)
        assert (cfg.max_retries, cfg.initial_retry_delay, cfg.max_retry_delay, cfg.max_retry_after) == (2, 0.5, 8.0,
                                                                                                          60.0)
        assert cfg.stream_idle_timeout == 300.0 and cfg.allow_insecure_http is False
        assert (cfg.max_response_bytes, cfg.max_sse_event_bytes, cfg.max_stream_text_bytes) == (64 << 20, 16 << 20,
                                                                                                 64 << 20)
    assert holysheep.Client(api_key=KEY, timeout=3).config.timeout == httpx.Timeout(3, connect=3)
    assert holysheep.Client(api_key=KEY, timeout=30).config.timeout == httpx.Timeout(30, connect=5)
    assert httpx.Limits(max_connections=1000, max_keepalive_connections=100) == DEFAULT_LIMITS


def test_the_429_message_docs_errors_md_quotes(kind: str, slept: list[float]) -> None:
    body = json.dumps({"error": {"message": "Rate limit reached for requests.", "type": "rate_limit_exceeded",
                                 "code": "rate_limit_exceeded"}}).encode()
    reply = fixed(429, body, x_request_id="req_abc").replace(b"429 X", b"429 Too Many Requests", 1)

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(reply)

    with HostileServer(scenario) as srv, pytest.raises(RateLimitError) as info:
        default_chat(kind, srv.url)
    assert str(info.value) == (
        "HTTP 429 Too Many Requests: Rate limit reached for requests. (type=rate_limit_exceeded, "
        "code=rate_limit_exceeded) after 2 retries [request_id=req_abc]. Rate limited: lower concurrency, or use "
        "client.chat.completions.batch(rpm=..., tpm=...).")


def test_holysheep_log_debug_logs_each_retry_to_stderr_without_the_key() -> None:
    code = ("import sys, holysheep\n"
            "c = holysheep.Client(api_key=sys.argv[1], base_url=sys.argv[2])\n"
            "try:\n    c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'Hi'}])\n"
            "except holysheep.InternalServerError:\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOLYSHEEP_")} | {"HOLYSHEEP_LOG": "debug"}
    with HostileServer(serve(503, retry_after_ms="0")) as srv:
        done = subprocess.run([sys.executable, "-c", code, KEY, srv.url], env=env, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 0, done.stderr
    retries = [line for line in done.stderr.splitlines() if "retrying POST" in line]
    assert len(retries) == 2 and "(retry 1 of 2)" in retries[0] and "(retry 2 of 2)" in retries[1], done.stderr
    assert KEY not in done.stderr and len(srv.requests) == 3

"""Rate limits a server announces, when it lies or speaks another dialect (issue 31, items 4 and 5).

Each test runs a batch on both async transports against a server on 127.0.0.1 that announces limits in
its reply headers (and, where it says so, enforces them with its own token bucket, answering 429).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import formatdate
from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._engine.server_limits import LIMITS_MEMORY
from holysheep.batch import BatchUnfinishedError

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, fixed


def completion(total_tokens: int = 4) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": total_tokens}}).encode()


RATE_LIMITED = json.dumps({"error": {"message": "rate limited", "type": "rate_limit_error"}}).encode()


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    LIMITS_MEMORY.forget()
    yield
    LIMITS_MEMORY.forget()


@pytest.fixture(params=["aiohttp", "httpx"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_batch(url: str, backend: str, n: int, *, within: float = 20.0, **params: Any) -> Any:
    params.setdefault("concurrency", 4)
    params.setdefault("check_quota", False)

    async def go() -> Any:
        async with AsyncClient(api_key=KEY, base_url=url, http_backend=backend,
                               max_retries=params.pop("max_retries", 2), initial_retry_delay=0.05) as client:
            return await asyncio.wait_for(client.chat.completions.batch([MESSAGES] * n, model="m", **params),
                                          within)

    return asyncio.run(go())


class Bucket:
    """The server's own limit: ``rate`` per second, ``capacity`` at most, starting at ``level``."""

    def __init__(self, rate: float, capacity: float, level: float) -> None:
        self.rate, self.capacity, self.level = rate, capacity, level
        self.stamp = time.monotonic()
        self.rejected = 0

    def take(self) -> bool:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level >= 1:
            self.level -= 1
            return True
        self.rejected += 1
        return False


def serving(headers: Callable[[], dict[str, str]], bucket: Bucket | None = None,
            body: Callable[[], bytes] = completion) -> Any:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        ok = bucket is None or bucket.take()
        w.write(fixed(200, body(), **headers()) if ok else fixed(429, RATE_LIMITED, **headers()))

    return scenario


# --- 4. absurd numbers ----------------------------------------------------------------------------------


POISON = {
    "rpm 0.001": {"x_ratelimit_limit_requests": "0.001", "x_ratelimit_remaining_requests": "0"},
    "rpm 1e-300": {"x_ratelimit_limit_requests": "1e-300"},
    "tpm 1": {"x_ratelimit_limit_tokens": "1", "x_ratelimit_remaining_tokens": "0"},
}


@pytest.mark.parametrize("poison", list(POISON))
def test_an_implausible_limit_is_ignored_logged_once_and_not_remembered(
        backend: str, poison: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="holysheep")
    with HostileServer(serving(lambda: POISON[poison])) as srv:
        first = run_batch(srv.url, backend, 20)
        second = run_batch(srv.url, backend, 20)  # the limits memory did not keep the poison either
    for results in (first, second):
        assert [r.ok for r in results] == [True] * 20
        assert results.stats.learned_rpm is None and results.stats.learned_tpm is None
    notes = [r for r in caplog.records if "implausible" in r.getMessage()]
    assert len(notes) == 1, [r.getMessage() for r in caplog.records]


def test_usage_beyond_what_the_request_could_use_is_capped(backend: str) -> None:
    headers = {"x_ratelimit_limit_tokens": "100000", "x_ratelimit_remaining_tokens": "100000"}
    with HostileServer(serving(lambda: headers, body=lambda: completion(10**30))) as srv:
        results = run_batch(srv.url, backend, 20, max_tokens=16)
    assert [r.ok for r in results] == [True] * 20
    assert results.stats.learned_tpm == 100000


def test_a_batch_without_progress_for_outage_after_s_stops_resumably(backend: str,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="holysheep")
    # 2 requests a minute: after the first, the next slot is ~30 s away, longer than outage_after_s=1
    headers = {"x_ratelimit_limit_requests": "2", "x_ratelimit_remaining_requests": "1"}
    started = time.monotonic()
    with HostileServer(serving(lambda: headers)) as srv:
        results = run_batch(srv.url, backend, 6, outage_after_s=1.0, concurrency=1)  # the first wave: one
        assert len(srv.requests) <= 2
    assert time.monotonic() - started < 10
    assert results[0].ok
    unfinished = [r for r in results if not r.ok]
    assert unfinished and all(isinstance(r.error, BatchUnfinishedError) for r in unfinished)
    assert "no progress" in results.stats.stop_reason
    stops = [r.getMessage() for r in caplog.records if r.getMessage().startswith("batch stopped")]
    assert stops == [f"batch stopped: {results.stats.stop_reason}; unfinished items can be run again"]


# --- 5. provider formats ----------------------------------------------------------------------------------


def _groq_like(limit: int, bucket: Bucket) -> Callable[[], dict[str, str]]:
    """Groq: x-ratelimit-limit-requests is per *day*; the reset is when the bucket is full again."""
    def headers() -> dict[str, str]:
        remaining = max(0, int(bucket.level))
        return {"x_ratelimit_limit_requests": str(limit), "x_ratelimit_remaining_requests": str(remaining),
                "x_ratelimit_reset_requests": f"{(limit - remaining) / bucket.rate:.2f}s"}
    return headers


def test_a_limit_over_a_longer_window_is_paced_from_its_reset(backend: str) -> None:
    # 864,000 requests a day (10 a second): read as per minute it would be 14,400 a second
    bucket = Bucket(rate=10.0, capacity=864000, level=3)
    with HostileServer(serving(_groq_like(864000, bucket), bucket)) as srv:
        results = run_batch(srv.url, backend, 30, concurrency=3, max_retries=8)  # the first wave fits the 3 left
    assert [r.ok for r in results] == [True] * 30, [(i, repr(r.error)) for i, r in enumerate(results) if not r.ok]
    assert bucket.rejected <= 2, bucket.rejected
    assert results.stats.learned_rpm == 600  # 10 a second


def _rfc3339(seconds_ahead: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds_ahead)).isoformat().replace("+00:00", "Z")


def test_anthropic_ratelimit_headers_are_read(backend: str) -> None:
    headers = {"anthropic_ratelimit_requests_limit": "50", "anthropic_ratelimit_requests_remaining": "49",
               "anthropic_ratelimit_requests_reset": _rfc3339(1.2),
               "anthropic_ratelimit_tokens_limit": "40000", "anthropic_ratelimit_tokens_remaining": "39990",
               "anthropic_ratelimit_tokens_reset": _rfc3339(0.1)}
    with HostileServer(serving(lambda: headers)) as srv:
        results = run_batch(srv.url, backend, 3)
    assert results.stats.learned_rpm == 50 and results.stats.learned_tpm == 40000


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_remaining_zero_without_a_limit_waits_for_the_reset(backend: str, dialect: str) -> None:
    sent: list[float] = []

    def headers() -> dict[str, str]:
        sent.append(time.monotonic())
        remaining = "0" if len(sent) == 1 else "5"
        if dialect == "openai":
            return {"x_ratelimit_remaining_requests": remaining, "x_ratelimit_reset_requests": "1s"}
        skew = 300  # the server's clock is 5 minutes fast: the reset is read against its Date header
        server_now = time.time() + skew
        reset = datetime.fromtimestamp(int(server_now) + 2, timezone.utc).isoformat().replace("+00:00", "Z")
        return {"anthropic_ratelimit_requests_remaining": remaining, "anthropic_ratelimit_requests_reset": reset,
                "date": formatdate(server_now, usegmt=True)}

    with HostileServer(serving(headers)) as srv:
        results = run_batch(srv.url, backend, 3, concurrency=1)
    assert [r.ok for r in results] == [True] * 3
    assert len(sent) == 3
    assert 0.5 <= sent[1] - sent[0] < 4.0
    assert results.stats.pauses == 1


def test_an_announced_limit_that_wobbles_does_not_refill_the_bucket(backend: str) -> None:
    bucket = Bucket(rate=10.0, capacity=2, level=2)
    replies = {"n": 0}

    def headers() -> dict[str, str]:
        replies["n"] += 1
        return {"x_ratelimit_limit_requests": "600" if replies["n"] % 2 else "601",
                "x_ratelimit_remaining_requests": str(max(0, int(bucket.level)))}

    with HostileServer(serving(headers, bucket)) as srv:
        results = run_batch(srv.url, backend, 40, concurrency=2, max_retries=8)  # the first wave fits the 2 left
    assert [r.ok for r in results] == [True] * 40
    assert bucket.rejected <= 3, bucket.rejected

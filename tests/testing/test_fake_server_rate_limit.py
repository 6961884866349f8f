"""FakeServer(rpm_limit=...): a token-bucket request limit with 429 + Retry-After beyond it."""

from __future__ import annotations

import httpx
import pytest

from holysheep.testing import FakeServer
from holysheep.testing._ratelimit import RequestRateLimit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bucket_schedule_is_exact() -> None:
    clock = Clock()
    limit = RequestRateLimit(120, burst=2, clock=clock)  # 2 per second, burst 2
    assert limit.take() is None
    assert limit.take() is None
    assert limit.take() == pytest.approx(0.5)
    clock.now += 0.25
    assert limit.take() == pytest.approx(0.25)
    clock.now += 0.25
    assert limit.take() is None
    assert (limit.allowed, limit.rejected) == (3, 2)
    assert limit.headers(0.25)["retry-after-ms"] == "250"
    assert limit.headers(0.25)["x-ratelimit-limit-requests"] == "120"


def test_server_answers_429_beyond_the_limit() -> None:
    with FakeServer(rpm_limit=60, rpm_burst=3) as server:
        headers = {"authorization": f"Bearer {server.api_key}"}
        body = {"model": "deepseek-v3.2", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client() as http:
            statuses = [http.post(f"{server.url}/chat/completions", json=body, headers=headers) for _ in range(5)]
            models = http.get(f"{server.url}/models", headers=headers)
    assert [r.status_code for r in statuses] == [200, 200, 200, 429, 429]
    limited = statuses[3]
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    assert 0 < int(limited.headers["retry-after-ms"]) <= 1000
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    assert models.status_code == 200  # only chat completions are limited
    assert server.rate_limit is not None and server.rate_limit.rejected == 2

"""rpm="auto" (the default) follows the x-ratelimit-* headers the server sends."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._engine.server_limits import ServerLimits, parse_duration, read_limits
from holysheep.testing import FakeServer


@pytest.mark.parametrize("text, seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1m30.5s", 90.5), ("1h2m", 3720.0), ("2.5", 2.5),
    ("0s", 0.0), ("", None), ("soon", None), ("5x", None), ("-1", None), ("1s5", None),
])
def test_parse_duration(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_read_limits() -> None:
    headers = {"x-ratelimit-limit-requests": "3000", "x-ratelimit-remaining-requests": "2999",
               "x-ratelimit-reset-requests": "20ms", "x-ratelimit-limit-tokens": "150000",
               "x-ratelimit-remaining-tokens": "149000", "x-ratelimit-reset-tokens": "6m0s"}
    assert read_limits(headers) == ServerLimits(3000, 2999, 0.02, 150000, 149000, 360.0)
    assert read_limits({"retry-after": "1"}) is None


@pytest.mark.integration  # a wall-time band: needs a machine that is not saturated
def test_batch_follows_a_3000_rpm_server_limit() -> None:
    n, concurrency, rpm = 400, 64, 3000
    with FakeServer(rpm_limit=rpm) as server:
        async def main() -> Any:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                start = time.monotonic()
                results = await client.chat.completions.batch([f"p{i}" for i in range(n)], model="m",
                                                              concurrency=concurrency, check_quota=False)
                return results, time.monotonic() - start

        results, elapsed = asyncio.run(main())
    chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
    limited = sum(1 for r in chat if r.status == 429)
    assert all(r.ok for r in results)
    assert limited <= 0.02 * n, limited
    pace = n / (rpm / 60)  # 400 requests at 50 per second
    assert elapsed <= 1.25 * pace, (elapsed, pace)
    assert results.stats.learned_rpm == 3000

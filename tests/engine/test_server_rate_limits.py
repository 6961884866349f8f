"""rpm="auto" (the default) follows the x-ratelimit-* headers the server sends."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

import holysheep._engine.run as engine_run
from holysheep import AsyncClient
from holysheep._engine.iterator import BatchIterator
from holysheep._engine.server_limits import ServerLimits, parse_duration, read_limits
from holysheep.testing import FakeServer
from holysheep.testing import _endpoints as endpoints

from .._fakes import FakeClock, RecordingSender, Sent, sleep_once_counted


def chat_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


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


def test_batch_follows_a_3000_rpm_server_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine and the server's limiter run on one injected clock: the schedule is exact whatever the
    machine's load. The batch starts at full concurrency, 50 (no limit is known yet: the first wave goes
    before any reply, #45; here it fits the server's one-second burst), learns 3,000 RPM from the first reply
    and then never exceeds it (the server, a bucket of one second's worth, answers no 429), and it is no
    slower than the limit's pace.

    The clock moves only when the engine sleeps, and a sleep takes no real time, while a request takes real
    time to reach the server's thread: unchecked, the engine could move the clock on while requests it had
    sent were still on their way, and the server would count them late, together with later ones (its bucket,
    full meanwhile, loses the refill). So every sleep first waits until the server has answered (read the
    clock for) every request the engine handed over: each is counted at the time it was sent."""
    clock = FakeClock()
    sent: list[Sent] = []

    def build(sender: Any, requests: Any, **kwargs: Any) -> BatchIterator:
        recording = RecordingSender(sender, clock, record=Sent, sent=sent)
        return BatchIterator(recording, requests, clock=clock, sleep=sleep, **kwargs)

    sleep = sleep_once_counted(clock, sent, lambda: sum(r.status is not None for r in chat_requests(server)))

    monkeypatch.setattr(engine_run, "BatchIterator", build)
    monkeypatch.setattr(endpoints, "time", types.SimpleNamespace(monotonic=clock))  # the server's limiter
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", "off")  # this process's bucket only (no file of an earlier run)
    n, concurrency, rpm = 400, 50, 3000
    with FakeServer(rpm_limit=rpm) as server:
        server._rpm_stamp = clock.now

        async def main() -> Any:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                return await client.chat.completions.batch([f"p{i}" for i in range(n)], model="m",
                                                           concurrency=concurrency, check_quota=False)

        results = asyncio.run(main())
    chat = chat_requests(server)
    assert all(r.ok for r in results)
    assert [r.status for r in chat] == [200] * n  # never over the limit: not one 429
    assert results.stats.learned_rpm == 3000 and results.stats.rate_limited == 0
    assert sum(r.attempts for r in results) == n
    burst, pace = rpm / 60, n / (rpm / 60)  # one second's worth at once, then 50 per second: 400 in 8 s
    assert (n - burst) / (rpm / 60) <= clock.now <= pace, clock.now


def test_a_reset_beyond_a_minute_is_never_a_per_minute_limit() -> None:
    """Issue 45: 14,400 with 14,000 remaining and a reset of 2m59.56s fits no window by the refill rule (6,464 s),
    yet a per-minute limit never resets 3 minutes away: the day's window (the first at least 6,464 s)."""
    from holysheep._engine.server_limits import limit_window

    assert limit_window(14400, 14000, 179.56) == 86400.0
    assert limit_window(14400, 14370, 179.56) == 86400.0  # Groq's own numbers (30 used)
    assert limit_window(1000, 900, 90.0) == 3600.0  # 900 s: neither, and beyond a minute: the hour
    assert limit_window(14400, None, 179.56) == 3600.0  # no remaining: the reset alone
    assert limit_window(600, 100, 50.0) is None  # within a minute: per minute, as before

"""Single requests take from the key's shared rate-limit buckets (`KEY_LIMITS`), the ones batches use, and feed
them the ``x-ratelimit-*`` headers of their replies; the waits run on an injected clock."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, RateLimitError
from holysheep._clients.senders import config_limits_key
from tests._fakes import FakeClock

KEY = "hs_TestKey0123456789abcdefWXYZ"
BASE = "https://api.holysheep.ai/v1"
MESSAGES = [{"role": "user", "content": "Hi"}]
COMPLETION = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
LIMITS = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "1"}


def run_three(kind: str, clock: FakeClock) -> list[float]:
    """Three requests on one client whose sleeps move ``clock``; the sleeps it made."""
    if kind == "sync":
        with Client(api_key=KEY, max_retries=0) as client:
            client._use_limits_clock(clock, lambda s: clock.sleeps.append(s) or clock.advance(s))
            for _ in range(3):
                client.chat.completions.create(model="m", messages=MESSAGES)
        return clock.sleeps

    async def main() -> None:
        async with AsyncClient(api_key=KEY, max_retries=0) as client:
            client._use_limits_clock(clock, lambda s: None, clock.sleep)
            for _ in range(3):
                await client.chat.completions.create(model="m", messages=MESSAGES)

    asyncio.run(main())
    return clock.sleeps


def test_announced_limits_pace_the_next_requests(kind: str, respx_mock: respx.MockRouter) -> None:
    """The first reply announces 60 requests a minute, 1 left: the bucket is made at 0.98/s (`LEARNED_SHARE`) with
    that 1 in it. The second request takes it; the third waits exactly one request's refill, 1/0.98 s."""
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION, headers=LIMITS)
    clock = FakeClock(1000.0)
    assert run_three(kind, clock) == [round(1 / 0.98, 9) if kind == "async" else 1 / 0.98]
    assert route.call_count == 3


def test_a_bucket_a_batch_made_is_shared(kind: str, respx_mock: respx.MockRouter) -> None:
    """A batch on the same base URL and key made the requests bucket (1 a second, empty): each single request waits
    its turn in it, 1.0 s apart, and the replies that announce nothing leave it as it is."""
    from holysheep._engine.key_limits import KEY_LIMITS

    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    clock = FakeClock(1000.0)
    with Client(api_key=KEY) as probe:
        key = config_limits_key(probe.config)
    KEY_LIMITS.bucket(key, "requests", 1.0, 1.0, clock=clock, sleep=clock.sleep, level=0.0)
    assert run_three(kind, clock) == [1.0, 1.0, 1.0]
    assert clock.now == 1003.0
    assert route.call_count == 3


def test_no_known_limit_means_no_wait_and_no_limits_object(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    clock = FakeClock(1000.0)
    assert run_three(kind, clock) == []
    assert route.call_count == 3


def test_a_plain_client_never_loads_the_rate_limit_module(respx_mock: respx.MockRouter) -> None:
    """Without a cap and before anything loaded the buckets' module, a request asks nothing but ``sys.modules``."""
    respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    saved = sys.modules.pop("holysheep._engine.key_limits", None)
    try:
        with Client(api_key=KEY) as client:
            client.chat.completions.create(model="m", messages=MESSAGES)
            assert client._limits is None
            assert "holysheep._engine.key_limits" not in sys.modules
    finally:
        if saved is not None:
            sys.modules["holysheep._engine.key_limits"] = saved


def test_as_openai_requests_take_from_the_shared_bucket(kind: str, respx_mock: respx.MockRouter) -> None:
    pytest.importorskip("openai")
    from holysheep._engine.key_limits import KEY_LIMITS

    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    clock = FakeClock(1000.0)
    if kind == "sync":
        with Client(api_key=KEY) as client:
            KEY_LIMITS.bucket(client._limits_key, "requests", 0.5, 1.0, clock=clock, sleep=clock.sleep, level=1.0)
            client._use_limits_clock(clock, lambda s: clock.sleeps.append(s) or clock.advance(s))
            oa = client.as_openai()
            for _ in range(2):
                oa.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    else:
        async def main() -> Any:
            async with AsyncClient(api_key=KEY) as client:
                KEY_LIMITS.bucket(client._limits_key, "requests", 0.5, 1.0, clock=clock, sleep=clock.sleep,
                                  level=1.0)
                client._use_limits_clock(clock, lambda s: None, clock.sleep)
                oa = client.as_openai()
                for _ in range(2):
                    await oa.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        asyncio.run(main())
    assert clock.sleeps == [2.0]  # the first takes the 1 in the bucket, the second waits 1 / 0.5 s
    assert route.call_count == 2


def test_a_429_lowers_the_shared_rate_and_discovery_stops_after_eight_replies(respx_mock: respx.MockRouter) -> None:
    """Once the key's limit is known, a 429 lowers the shared bucket's rate (x0.7, `DECREASE`) and empties it. A
    client with no known limit looks at its first 8 replies only: a 9th that announces one is not read."""
    from holysheep._engine.key_limits import KEY_LIMITS

    replies = iter([httpx.Response(200, json=COMPLETION, headers=LIMITS),
                    httpx.Response(429, json={"error": {"message": "slow down"}})])
    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=lambda request: next(replies))
    clock = FakeClock(1000.0)
    with Client(api_key=KEY, max_retries=0) as client:
        client._use_limits_clock(clock, lambda s: clock.advance(s))
        client.chat.completions.create(model="m", messages=MESSAGES)
        bucket = KEY_LIMITS.peek(f"{client._limits_key}|model=m", "requests")
        assert bucket is not None and bucket.rate == 0.98
        with pytest.raises(RateLimitError):
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert (bucket.rate, bucket.level) == (0.98 * 0.7, 0.0)

    quiet = httpx.Response(200, json=COMPLETION)
    loud = httpx.Response(200, json=COMPLETION, headers=LIMITS)
    other = iter([quiet] * 8 + [loud])
    respx_mock.post("https://other.example/v1/chat/completions").mock(side_effect=lambda request: next(other))
    with Client(api_key=KEY, base_url="https://other.example/v1", max_retries=0) as client:
        for _ in range(9):
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert not KEY_LIMITS.known(client._limits_key)

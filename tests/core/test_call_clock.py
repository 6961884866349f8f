"""A call's ``elapsed_s`` (and ``with_raw_response``'s ``elapsed``) on an injected clock: exact, per attempt."""

from __future__ import annotations

import datetime
from typing import Any

import httpx
import respx

from .._fakes import FakeClock, TimedStore
from .conftest import BASE, COMPLETION, MESSAGES, run

URL = f"{BASE}/chat/completions"


def test_elapsed_is_the_serving_attempts_time(kind: str, respx_mock: respx.MockRouter) -> None:
    """A 503 after 1.5 s, then a 200 after 0.25 s: ``elapsed_s`` is the second attempt's 0.25 s."""
    clock = FakeClock()

    def answer(status: int, seconds: float) -> Any:
        def reply(request: httpx.Request) -> httpx.Response:
            clock.advance(seconds)
            return httpx.Response(status, json=COMPLETION if status == 200 else {"error": {"message": "busy"}})
        return reply

    respx_mock.post(URL).mock(side_effect=[answer(503, 1.5), answer(200, 0.25), answer(200, 0.5)])

    def go(client: Any) -> Any:
        client._use_clock(clock)
        return client.chat.completions.create(model="m", messages=MESSAGES)

    resp = run(kind, go, initial_retry_delay=0)
    assert (resp.retries_taken, resp.elapsed_s) == (1, 0.25)

    def raw(client: Any) -> Any:
        client._use_clock(clock)
        return client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)

    assert run(kind, raw).elapsed == datetime.timedelta(seconds=0.5)


def test_a_cache_hits_elapsed_is_its_lookup_on_the_calls_clock(kind: str, respx_mock: respx.MockRouter) -> None:
    """A response-cache hit: ``elapsed_s`` is the lookup's 0.125 s on the client's clock, not wall time."""
    clock = FakeClock()
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=COMPLETION))

    def go(client: Any) -> Any:
        client._use_clock(clock)
        if kind == "sync":
            return client.chat.completions.create(model="m", messages=MESSAGES), \
                client.chat.completions.create(model="m", messages=MESSAGES)

        async def both() -> Any:
            return (await client.chat.completions.create(model="m", messages=MESSAGES),
                    await client.chat.completions.create(model="m", messages=MESSAGES))
        return both()

    miss, hit = run(kind, go, cache=TimedStore(clock))
    assert route.call_count == 1
    assert (miss.cached, miss.elapsed_s) == (False, 0.0)  # the call starts after its lookup
    assert (hit.cached, hit.elapsed_s, hit.request_id) == (True, 0.125, None)
    assert clock.now == 0.25

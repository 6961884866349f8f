"""A call's ``elapsed_s`` (and ``with_raw_response``'s ``elapsed``) on an injected clock: exact, per attempt."""

from __future__ import annotations

import datetime
from typing import Any

import httpx
import respx

from ..streaming.conftest import FakeClock
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

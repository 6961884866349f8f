"""Stream metrics start when the request is sent: the first async stream's TTFT does not include the
transport's one-time set-up (importing aiohttp, building its session and TLS context)."""

from __future__ import annotations

from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._transports.aiohttp_backend import AiohttpBackend
from holysheep.testing import FakeServer

from .conftest import FakeClock

SETUP_S = 0.25


async def test_first_stream_ttft_excludes_the_session_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    opened = AiohttpBackend._open

    def slow_open(self: AiohttpBackend) -> Any:
        clock.advance(SETUP_S)  # the set-up takes 0.25 s on the client's clock; nothing else moves it
        return opened(self)

    monkeypatch.setattr(AiohttpBackend, "_open", slow_open)
    with FakeServer(reply="one two") as server:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            client._use_clock(clock)
            for expected_now in (SETUP_S, SETUP_S):  # the second stream opens nothing
                stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                              stream=True)
                async with stream:
                    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
                assert text == "one two"
                assert stream.metrics.ttft_s == 0.0 and stream.metrics.total_s == 0.0, stream.metrics
                assert clock.now == expected_now

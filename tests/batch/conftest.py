"""Fixtures for the batch tests: a FakeServer per test and clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import holysheep._engine.run as engine_run
from holysheep import AsyncClient, Client
from holysheep._engine.iterator import BatchIterator
from holysheep.testing import FakeServer

from .._fakes import FakeClock as FakeClock  # (re-exported: the batch tests import it here)
from .._fakes import RecordingSender, Sent

MODEL = "gpt-4.1"


@pytest.fixture(autouse=True, params=["default", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every batch test runs on the default transport (aiohttp) and on httpx: for the AsyncClient and for
    the AsyncClient the sync client's batch clones."""
    if request.param == "httpx":
        monkeypatch.setattr(AsyncClient, "_http_backends", ("httpx", "aiohttp"))  # the first is the default
        fn = AsyncClient.from_config.__func__  # type: ignore[attr-defined]
        monkeypatch.setattr(fn, "__kwdefaults__", {**(fn.__kwdefaults__ or {}), "http_backend": "httpx"})
    return str(request.param)


def async_client(server: FakeServer, **kwargs: Any) -> AsyncClient:
    """An AsyncClient for ``server`` on the transport this test run is parametrized with."""
    return AsyncClient(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def sync_client(server: FakeServer, **kwargs: Any) -> Client:
    return Client(api_key=kwargs.pop("api_key", server.api_key), base_url=server.url, **kwargs)


def chat_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(latency=0.01) as srv:
        yield srv


class ClockedEngine:
    """What the ``engine_clock`` fixture gives: the FakeClock every batch engine of the test runs on, each
    attempt as it went out (``sent``) and the engines built (``iterators``)."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.sent: list[Sent] = []
        self.iterators: list[BatchIterator] = []

    def build(self, sender: Any, requests: Any, **kwargs: Any) -> BatchIterator:
        recording = RecordingSender(sender, self.clock, record=Sent, sent=self.sent)
        it = BatchIterator(recording, requests, clock=self.clock, sleep=self.clock.sleep, **kwargs)
        self.iterators.append(it)
        return it


@pytest.fixture
def engine_clock(monkeypatch: pytest.MonkeyPatch) -> ClockedEngine:
    """``client.chat.completions.batch`` as users call it (every option, the probe, the quota check), with the
    engine on a FakeClock: its buckets, pause gate and outage clock move only when the engine sleeps, so
    a test asserts the exact schedule (each attempt's clock time) whatever the real round trips took."""
    engine = ClockedEngine()
    monkeypatch.setattr(engine_run, "BatchIterator", engine.build)
    return engine

"""Fixtures for the batch tests: a FakeServer per test and clients pointed at it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import holysheep._engine.run as engine_run
from holysheep import AsyncClient, Client
from holysheep._core.call import Call, Outcome
from holysheep._engine.iterator import BatchIterator
from holysheep._exceptions import APIStatusError
from holysheep.testing import FakeServer

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


class FakeClock:
    """A clock that only moves when something sleeps on it (each sleep also yields to the loop once)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 9))
        self.now += seconds
        await asyncio.sleep(0)


@dataclass
class Sent:
    """One attempt as the engine handed it to the sender: the engine clock's time, the body, and the reply's
    status (200, an HTTP error's status, or None for an error without one)."""

    at: float
    body: dict[str, Any]
    status: int | None = None


class _RecordingSender:
    """The client's Sender, recording every attempt (on the engine's clock) as it goes out."""

    def __init__(self, inner: Any, engine: ClockedEngine) -> None:
        self._inner, self._engine = inner, engine

    def __getattr__(self, name: str) -> Any:  # plan, limits_key, quota, reserve, hooks, aclose
        return getattr(self._inner, name)

    async def attempt(self, call: Call) -> Outcome:
        sent = Sent(self._engine.clock.now, dict(call.spec.body or {}))
        self._engine.sent.append(sent)
        outcome: Outcome = await self._inner.attempt(call)
        error = outcome.error
        sent.status = error.status_code if isinstance(error, APIStatusError) else 200 if error is None else None
        return outcome


class ClockedEngine:
    """What the ``engine_clock`` fixture gives: the FakeClock every batch engine of the test runs on, each
    attempt as it went out (``sent``) and the engines built (``iterators``)."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.sent: list[Sent] = []
        self.iterators: list[BatchIterator] = []

    def build(self, sender: Any, requests: Any, **kwargs: Any) -> BatchIterator:
        it = BatchIterator(_RecordingSender(sender, self), requests, clock=self.clock, sleep=self.clock.sleep,
                           **kwargs)
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

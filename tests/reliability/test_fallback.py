"""Self-hosted fallback and the circuit breaker, with two real local servers."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    CircuitBreaker,
    Client,
    Fallback,
    InvalidRequestError,
)
from holysheep.testing import FakeServer, Fault

MSG = [{"role": "user", "content": "ping pong"}]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _client(primary: FakeServer, backup: FakeServer, clock: Clock, **kw: object) -> Client:
    return Client(api_key=primary.api_key, base_url=primary.url, max_retries=1, initial_retry_delay=0,
                  fallbacks=[Fallback(base_url=backup.url, api_key=backup.api_key, name="gpu-box",
                                      models={"deepseek-v3.2": "Qwen/Qwen2.5-72B-Instruct"})],
                  circuit_breaker=CircuitBreaker(failure_threshold=2, cooldown_s=30, clock=clock),
                  **kw)  # type: ignore[arg-type]


def test_fail_over_open_circuit_probe_and_recover() -> None:
    clock = Clock()
    with FakeServer() as primary, FakeServer() as backup, _client(primary, backup, clock) as client:
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
        assert resp.served_by == "primary" and len(primary.requests) == 1 and not backup.requests

        primary.set_faults([Fault.status(503)] * 4)
        for _ in range(2):  # each call: primary + 1 retry fail, then the fallback serves it
            resp = client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
            assert resp.served_by == "gpu-box"
            assert resp.choices[0].message.content == "ping pong"
        assert backup.requests[-1].body["model"] == "Qwen/Qwen2.5-72B-Instruct"  # type: ignore[index]
        assert client.stats()["circuit"] == "open"
        before = len(primary.requests)
        client.chat.completions.create(model="deepseek-v3.2", messages=MSG)  # open: straight to fallback
        assert len(primary.requests) == before

        clock.now += 31  # half-open: one probe goes to the primary, which has recovered
        primary.set_faults([])
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
        assert resp.served_by == "primary" and len(primary.requests) == before + 1
        assert client.stats()["circuit"] == "closed"
        resp = client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
        assert resp.served_by == "primary"
        stats = client.stats()
        assert stats["fallback_served"] == 3 and stats["circuit_opened"] == 1
        assert stats["endpoints"]["gpu-box"]["successes"] == 3


def test_failed_probe_reopens_circuit() -> None:
    clock = Clock()
    with FakeServer() as primary, FakeServer() as backup, _client(primary, backup, clock) as client:
        primary.set_faults([Fault.status(500)] * 10)
        for _ in range(2):
            client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
        clock.now += 31
        n = len(primary.requests)
        assert client.chat.completions.create(model="deepseek-v3.2", messages=MSG).served_by == "gpu-box"
        assert len(primary.requests) == n + 2  # the probe (with its retry) failed
        assert client.stats()["circuit"] == "open"


@pytest.mark.parametrize(("fault", "exc"), [(Fault.status(400), BadRequestError),
                                            (Fault.unauthorized(), AuthenticationError)])
def test_caller_errors_never_fall_back(fault: Fault, exc: type[Exception]) -> None:
    with FakeServer() as primary, FakeServer() as backup, _client(primary, backup, Clock()) as client:
        primary.set_faults([fault])
        with pytest.raises(exc):
            client.chat.completions.create(model="deepseek-v3.2", messages=MSG)
        assert not backup.requests and client.stats()["circuit"] == "closed"


def test_stream_falls_back_before_first_event_only() -> None:
    with FakeServer() as primary, FakeServer() as backup, _client(primary, backup, Clock()) as client:
        primary.set_faults([Fault.status(502), Fault.status(502)])
        with client.chat.completions.create(model="deepseek-v3.2", messages=MSG, stream=True) as s:
            final = s.get_final_completion()
        assert final.served_by == "gpu-box" and final.choices[0].message.content == "ping pong"


def test_async_client_falls_back() -> None:
    async def main(primary: FakeServer, backup: FakeServer) -> None:
        async with AsyncClient(api_key=primary.api_key, base_url=primary.url, max_retries=0,
                               fallbacks=[Fallback(base_url=backup.url, api_key=backup.api_key)]) as client:
            primary.set_faults([Fault.reset()])
            resp = await client.chat.completions.create(model="m", messages=MSG)
            assert resp.served_by == f"127.0.0.1:{backup.port}"

    with FakeServer() as primary, FakeServer() as backup:
        asyncio.run(main(primary, backup))


def test_fallback_never_receives_the_holysheep_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer(require_auth=False) as backup, FakeServer() as primary:
        monkeypatch.setenv("HOLYSHEEP_API_KEY", primary.api_key)
        primary.set_faults([Fault.status(503)])
        with Client(base_url=primary.url, max_retries=0, fallbacks=[Fallback(base_url=backup.url)]) as client:
            assert client.chat.completions.create(model="m", messages=MSG).served_by != "primary"
        assert "authorization" not in backup.requests[-1].headers


def test_bad_fallback_arguments() -> None:
    with pytest.raises(InvalidRequestError, match="fallbacks"):
        Client(base_url="http://127.0.0.1:9/v1", fallbacks=["http://x"])  # type: ignore[list-item]
    with pytest.raises(InvalidRequestError, match="failure_threshold"):
        CircuitBreaker(failure_threshold=0)

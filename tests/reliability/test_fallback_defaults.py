"""docs/fallback.md with the defaults (``max_retries=2``, ``CircuitBreaker(failure_threshold=5,
cooldown_s=30.0)``): a caller's error (400, 401, 403, 404, 422) is one request to the primary and never
reaches the fallback; a failing primary is retried, then the fallback answers, and the fifth such call opens
the circuit so the sixth goes straight to the fallback. Retry sleeps are recorded, not slept."""

from __future__ import annotations

import pytest

from holysheep import (
    AuthenticationError,
    BadRequestError,
    CircuitBreaker,
    Client,
    Fallback,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from holysheep._clients import client as client_module
from holysheep.testing import FakeServer, Fault

MSG = [{"role": "user", "content": "ping"}]


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    delays: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", delays.append)
    return delays


def _client(primary: FakeServer, backup: FakeServer) -> Client:
    return Client(api_key=primary.api_key, base_url=primary.url,
                  fallbacks=[Fallback(base_url=backup.url, api_key=backup.api_key, name="gpu-box")])


def test_the_default_breaker() -> None:
    breaker = CircuitBreaker()
    assert (breaker.failure_threshold, breaker.cooldown_s) == (5, 30.0)


@pytest.mark.parametrize(("status", "exc"), [(400, BadRequestError), (401, AuthenticationError),
                                             (403, PermissionDeniedError), (404, NotFoundError),
                                             (422, UnprocessableEntityError)])
def test_a_caller_error_never_falls_back(slept: list[float], status: int, exc: type[Exception]) -> None:
    with FakeServer(faults=[Fault.status(status)]) as primary, FakeServer() as backup, \
            _client(primary, backup) as client:
        with pytest.raises(exc):
            client.chat.completions.create(model="m", messages=MSG)
        assert len(primary.requests) == 1 and not backup.requests and slept == []
        assert client.stats()["circuit"] == "closed"


def test_a_failing_primary_is_retried_then_served_by_the_fallback_and_the_fifth_failure_opens_the_circuit(
        slept: list[float]) -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(503)]) as primary, FakeServer() as backup, \
            _client(primary, backup) as client:
        for n in range(1, 6):
            resp = client.chat.completions.create(model="m", messages=MSG)
            assert resp.served_by == "gpu-box"
            assert len(primary.requests) == 3 * n  # 1 + max_retries each
            assert client.stats()["circuit"] == ("open" if n == 5 else "closed")
        resp = client.chat.completions.create(model="m", messages=MSG)
        assert resp.served_by == "gpu-box" and len(primary.requests) == 15  # the open circuit skips it
        assert len(backup.requests) == 6

"""Regression tests for the four defects of issue 13 (each failed on the code before the fix)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from holysheep import AsyncClient, Client, Fallback, InternalServerError, RateLimitError
from holysheep.testing import FakeServer, Fault

MODEL = "gpt-4.1"
MSG = [{"role": "user", "content": "hi"}]


def _chat(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.mark.parametrize("backend", ["aiohttp", "httpx"])
def test_batch_retries_send_retry_count_0_1_2_with_one_idempotency_key(backend: str) -> None:
    with FakeServer(faults=[Fault.status(500), Fault.status(503)]) as server:
        async def main() -> Any:
            async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0,
                                   http_backend=backend) as client:  # type: ignore[arg-type]
                return await client.chat.completions.batch(["only"], model=MODEL, check_quota=False)

        results = asyncio.run(main())
    assert results[0].ok and results[0].attempts == 3
    reqs = _chat(server)
    assert [r.headers["x-holysheep-retry-count"] for r in reqs] == ["0", "1", "2"]
    assert len({r.headers["idempotency-key"] for r in reqs}) == 1


def test_sync_batch_retries_send_retry_count_0_1_2() -> None:
    with FakeServer(faults=[Fault.status(500), Fault.status(503)]) as server, \
            Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
        results = client.chat.completions.batch(["only"], model=MODEL, check_quota=False)
    assert results[0].ok
    assert [r.headers["x-holysheep-retry-count"] for r in _chat(server)] == ["0", "1", "2"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_create_does_not_retry_insufficient_quota(kind: str) -> None:
    with FakeServer(faults=[Fault.quota_exhausted()]) as server:
        kwargs = {"api_key": server.api_key, "base_url": server.url, "initial_retry_delay": 0}
        with pytest.raises(RateLimitError) as info:
            if kind == "sync":
                with Client(**kwargs) as client:  # type: ignore[arg-type]
                    client.chat.completions.create(model=MODEL, messages=MSG)
            else:
                async def main() -> None:
                    async with AsyncClient(**kwargs) as client:  # type: ignore[arg-type]
                        await client.chat.completions.create(model=MODEL, messages=MSG)

                asyncio.run(main())
    assert info.value.type == "insufficient_quota" or info.value.code == "insufficient_quota"
    assert len(_chat(server)) == 1


def test_batch_calls_the_clients_on_retry_hook_with_its_delays() -> None:
    calls: list[tuple[int, str, float]] = []

    def hook(retry: int, error: Any, delay: float) -> None:
        calls.append((retry, type(error).__name__, delay))

    with FakeServer(faults=[Fault.status(500), Fault.status(500)]) as server, \
            Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0.01, max_retry_delay=0.01,
                   on_retry=hook) as client:
        results = client.chat.completions.batch(["only"], model=MODEL, check_quota=False)
    assert results[0].ok and results[0].attempts == 3
    assert [(n, name) for n, name, _ in calls] == [(1, "InternalServerError"), (2, "InternalServerError")]
    assert all(0.0075 <= d <= 0.01 for _, _, d in calls)  # the client's delays (10 ms, 75-100 % jitter)


def test_batch_uses_its_own_retry_policy_unless_max_retries_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25: the client's small count (here 3) is for one interactive call; a batch item is retried until
    it succeeds or the batch stops on an outage (here: 100 failures of 100 attempts). ``max_retries=`` on the
    batch still caps it. The engine sleeps on a fake clock: its backoffs take no real time."""
    import holysheep._engine.run as engine_run
    from holysheep._engine.iterator import BatchIterator
    from holysheep.batch import BatchUnfinishedError

    from .._fakes import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(engine_run, "BatchIterator",
                        lambda sender, requests, **kw: BatchIterator(sender, requests, clock=clock,
                                                                     sleep=clock.sleep, **kw))

    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as server, \
            Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0, max_retries=3) as client:
        first = client.chat.completions.batch(["a"], model=MODEL, check_quota=False)
        assert first[0].attempts == 100 and isinstance(first[0].error, BatchUnfinishedError)
        assert isinstance(first[0].error.last_error, InternalServerError)
        second = client.chat.completions.batch(["b"], model=MODEL, check_quota=False, max_retries=1)
        assert second[0].attempts == 2 and isinstance(second[0].error, InternalServerError)
    assert len(_chat(server)) == 102


def test_with_options_reaches_the_fallbacks() -> None:
    with FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as primary, \
            FakeServer(fault_rate=1.0, fault_mix=[Fault.status(500)]) as fallback:
        client = Client(api_key=primary.api_key, base_url=primary.url, initial_retry_delay=0,
                        fallbacks=[Fallback(base_url=fallback.url, api_key=fallback.api_key)])
        fast = client.with_options(timeout=1, max_retries=0)
        with pytest.raises(InternalServerError):
            fast.chat.completions.create(model=MODEL, messages=MSG)
        assert (len(_chat(primary)), len(_chat(fallback))) == (1, 1)  # no retries on either endpoint
        endpoint = fast.stats()["endpoints"]
        assert list(endpoint) == ["primary", f"127.0.0.1:{fallback.url.split(':')[2].split('/')[0]}"]
        with pytest.raises(InternalServerError):
            client.chat.completions.create(model=MODEL, messages=MSG)
        assert (len(_chat(primary)), len(_chat(fallback))) == (4, 4)  # the original keeps 2 retries each
        client.close()

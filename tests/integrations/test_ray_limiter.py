"""The cluster limiter and a replica's gate, in-process with an injected clock (no Ray needed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from holysheep import AuthenticationError, RateLimitError
from holysheep._core.call import Outcome
from holysheep.integrations.ray._gate import GatedSender, LocalLink, estimate_tokens
from holysheep.integrations.ray._limiter import ClusterRateLimiter, Lease


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rpm_bucket_grants_chunks_then_says_how_long_to_wait() -> None:
    clock = Clock()
    limiter = ClusterRateLimiter(rpm=600, burst_s=0.5, canary=False, clock=clock)  # 10/s, bucket of 5
    assert limiter.lease(4) == Lease(requests=4)
    assert limiter.lease(4) == Lease(requests=1)  # what is left: a partial grant
    assert limiter.lease(4) == Lease(wait_s=pytest.approx(0.1))
    clock.now += 0.3
    assert limiter.lease(4) == Lease(requests=3)
    assert limiter.granted_requests == 8


def test_tokens_are_all_or_nothing_and_an_oversized_request_runs_into_debt() -> None:
    clock = Clock()
    limiter = ClusterRateLimiter(tpm=60_000, burst_s=1.0, canary=False, clock=clock)  # 1000/s, bucket 1000
    assert limiter.lease(1, 800) == Lease(requests=1, tokens=800)
    assert limiter.lease(1, 300) == Lease(wait_s=pytest.approx(0.1))
    clock.now += 0.1
    assert limiter.lease(1, 300) == Lease(requests=1, tokens=300)
    clock.now += 10
    assert limiter.lease(1, 5000) == Lease(requests=1, tokens=5000)  # larger than the bucket: allowed when full
    assert limiter.lease(1, 10) == Lease(wait_s=pytest.approx(4.01))


def test_pause_holds_every_lease_and_the_longest_pause_wins() -> None:
    clock = Clock()
    limiter = ClusterRateLimiter(rpm=6000, canary=False, clock=clock)
    limiter.pause(2.0)
    limiter.pause(0.5)
    assert limiter.lease(1) == Lease(wait_s=2.0)
    clock.now += 2.0
    assert limiter.lease(1).requests == 1
    assert limiter.pauses == 2


def test_canary_lets_one_request_out_until_confirmed_then_stop_refuses_everyone() -> None:
    clock = Clock()
    limiter = ClusterRateLimiter(clock=clock)
    assert limiter.lease(8) == Lease(requests=1)
    assert limiter.lease(8) == Lease(wait_s=0.02)
    limiter.stop("Incorrect API key provided.")
    assert limiter.lease(8) == Lease(stopped="Incorrect API key provided.")

    other = ClusterRateLimiter(clock=clock)
    assert other.lease(8) == Lease(requests=1)
    other.release_canary()  # no answer: another canary may go
    assert other.lease(8) == Lease(requests=1)
    other.confirm()
    assert other.lease(8) == Lease(requests=8)


def test_learned_limits_lower_the_configured_ones_only() -> None:
    clock = Clock()
    limiter = ClusterRateLimiter(rpm=1000, canary=False, clock=clock)
    limiter.learn(limit_requests=5000, limit_tokens=90_000)
    assert limiter.limits() == (1000, 90_000)
    limiter.learn(limit_requests=120)
    assert limiter.limits() == (120, 90_000)


class FakeInner:
    """The client's `Sender` as `GatedSender` sees it: `attempt(call)` answers with the next scripted outcome."""

    def __init__(self, errors: list[BaseException | None] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.calls: list[Any] = []
        self.errors = list(errors or [])
        self.headers = headers
        self.closed = False

    def plan(self, params: Any, *, idempotency_key: str | None = None) -> Any:
        return SimpleNamespace(call=_call(params), key=idempotency_key)

    async def attempt(self, call: Any) -> Outcome:
        self.calls.append(call.spec.body)
        call.response_headers = self.headers
        error = self.errors.pop(0) if self.errors else None
        return Outcome(value={"ok": True}) if error is None else Outcome(error=error)  # type: ignore[arg-type]

    async def quota(self) -> Any:
        return "quota"

    async def aclose(self) -> None:
        self.closed = True


def _call(params: dict[str, Any]) -> Any:
    return SimpleNamespace(spec=SimpleNamespace(body=params), response_headers=None)


async def _send(sender: GatedSender, params: dict[str, Any]) -> Outcome:
    return await sender.attempt(_call(params))  # type: ignore[arg-type]


def _params(text: str = "x" * 40) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 10}


def test_estimate_tokens() -> None:
    assert estimate_tokens(_params("x" * 41)) == 11 + 10
    assert estimate_tokens({"messages": [{"content": [{"type": "text", "text": "abcd"}]}]}) == 1 + 256


async def test_sender_leases_in_chunks_not_per_request() -> None:
    limiter = ClusterRateLimiter(rpm=60_000, canary=False)
    link = LocalLink(limiter)
    create = FakeInner()
    sender = GatedSender(create, link, chunk=8)
    outcomes = await asyncio.gather(*(_send(sender, _params()) for _ in range(32)))
    assert all(o.error is None for o in outcomes)
    assert len(create.calls) == 32
    assert link.lease_calls == 4
    assert limiter.granted_requests == 32


async def test_tpm_charges_the_estimate_of_each_request() -> None:
    limiter = ClusterRateLimiter(tpm=6_000_000, canary=False)
    sender = GatedSender(FakeInner(), LocalLink(limiter), chunk=4, limit_tokens=True)
    for _ in range(3):
        await _send(sender, _params())
    assert limiter.granted_tokens == 3 * (10 + 10)


def _status_error(cls: type[Any], status: int, retry_after: float | None = None) -> Any:
    err = cls("boom", status_code=status)
    err.retry_after = retry_after
    return err


async def test_a_429_pauses_the_whole_cluster_for_its_retry_after() -> None:
    limiter = ClusterRateLimiter(rpm=60_000, canary=False)
    sender = GatedSender(FakeInner([_status_error(RateLimitError, 429, 1.5)]), LocalLink(limiter), chunk=4)
    outcome = await _send(sender, _params())
    assert isinstance(outcome.error, RateLimitError)  # handed back to the engine, which retries it
    assert limiter.pauses == 1
    lease = limiter.lease(1)
    assert lease.requests == 0 and 1.4 < lease.wait_s <= 1.5


async def test_a_rejected_key_stops_every_replica_before_it_sends() -> None:
    limiter = ClusterRateLimiter(rpm=60_000)  # canary on
    link = LocalLink(limiter)
    first = FakeInner([_status_error(AuthenticationError, 401)])
    others = [FakeInner() for _ in range(3)]
    senders = [GatedSender(first, link, chunk=8)] + [GatedSender(c, link, chunk=8) for c in others]
    outcomes = await asyncio.gather(*(_send(s, _params()) for s in senders for _ in range(5)),
                                    return_exceptions=True)
    assert all(isinstance(o, Outcome) and isinstance(o.error, AuthenticationError) for o in outcomes)
    assert len(first.calls) == 1 and all(not c.calls for c in others)  # one request reached the server


async def test_announced_limits_are_learned_once_per_change() -> None:
    limiter = ClusterRateLimiter(canary=False)
    link = LocalLink(limiter)
    calls: list[tuple[float | None, float | None]] = []
    real_learn = link.learn
    link.learn = lambda r, t: (calls.append((r, t)), real_learn(r, t))[-1]  # type: ignore[method-assign]
    inner = FakeInner(headers={"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "599",
                               "x-ratelimit-limit-tokens": "100000"})
    sender = GatedSender(inner, link, chunk=2)
    for _ in range(3):
        await _send(sender, _params())
    assert calls == [(600 * 0.98, 100_000 * 0.98)]
    assert limiter.limits() == (588.0, 98_000.0)
    inner.headers = {"x-ratelimit-limit-requests": "60"}
    await _send(sender, _params())
    assert calls[-1] == (60 * 0.98, None) and limiter.limits()[0] == pytest.approx(58.8)


async def test_a_learned_token_limit_is_charged_without_a_configured_tpm() -> None:
    limiter = ClusterRateLimiter(canary=False)
    inner = FakeInner(headers={"x-ratelimit-limit-tokens": "600000"})
    sender = GatedSender(inner, LocalLink(limiter), chunk=4)  # limit_tokens=False: no tpm configured
    await _send(sender, _params())
    assert limiter.granted_tokens == 0  # nothing known yet: the first request is not charged
    for _ in range(3):
        await _send(sender, _params())
    assert limiter.limits()[1] == 600_000 * 0.98
    assert limiter.granted_tokens == 3 * (10 + 10)  # then each request's estimate is


async def test_plan_quota_and_close_go_to_the_inner_sender() -> None:
    inner = FakeInner()
    sender = GatedSender(inner, LocalLink(ClusterRateLimiter(canary=False)))
    plan = sender.plan(_params(), idempotency_key="k1")
    assert plan.key == "k1" and plan.call.spec.body == _params()
    assert await sender.quota() == "quota"
    await sender.aclose()
    assert inner.closed


def test_cli_refuses_schema_with_ray_before_starting_anything(tmp_path: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli._batch import run_batch_command
    from holysheep.cli._batch_parser import build_parser

    source = tmp_path / "in.jsonl"
    source.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    args = build_parser().parse_args([str(source), "-o", str(tmp_path / "out"), "--ray", "--schema", "x.json"])
    assert run_batch_command(args) == 2
    assert "--schema cannot be used with --ray yet" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

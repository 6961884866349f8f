"""Exact schedules for the pieces behind the defaults: the per-key shared bucket (AIMD, the server's remaining,
two "processes" on one file)) and the open-files check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from holysheep import InvalidRequestError
from holysheep._engine.key_limits import KeyLimits, SharedBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_shared_bucket_aimd_and_the_servers_remaining() -> None:
    clock = Clock()
    bucket = SharedBucket(50.0, 0.2, clock=clock)  # 50/s, a burst of 10
    assert [bucket.take_now(1) for _ in range(11)] == [True] * 10 + [False]
    assert bucket.delay_for(1) == pytest.approx(0.02)
    clock.now += 0.1  # 5 tokens back
    bucket.cap(2)  # the server says 2 remain for the key: others use it too
    assert bucket.level == 2
    assert bucket.on_rate_limited() is True  # x0.7 and empty
    assert (bucket.rate, bucket.level) == (pytest.approx(35.0), 0.0)
    assert bucket.on_rate_limited() is False  # at most once a second
    clock.now += 1.0
    assert bucket.on_rate_limited() is True
    assert bucket.rate == pytest.approx(24.5)
    for _ in range(49):  # 49 successes at 24.5/s: about two seconds' worth, +5/s per second
        bucket.on_success()
    assert 33.0 < bucket.rate < 34.5
    for _ in range(500):
        bucket.on_success()
    assert bucket.rate == 50.0  # never above the target


def test_two_processes_share_one_bucket_file(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "k.bucket"
    fd_a = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fd_b = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # another open file description, as another process
    a = SharedBucket(50.0, 0.2, fd=fd_a, clock=clock)
    b = SharedBucket(50.0, 0.2, fd=fd_b, clock=clock)
    taken = [a.take_now(1) or b.take_now(1) for _ in range(12)]
    assert taken.count(True) == 10  # one burst between them, not one each
    a.on_rate_limited()
    assert b.rate == pytest.approx(35.0)  # a 429 seen by one slows both
    a.close()
    b.close()


def test_key_limits_hand_one_bucket_per_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(tmp_path))
    limits = KeyLimits()
    clock = Clock()

    async def sleep(s: float) -> None: ...

    one = limits.bucket("http://x/v1#abc", "requests", 49.0, 0.2, clock=clock, sleep=sleep)
    two = limits.bucket("http://x/v1#abc", "requests", 49.0, 0.2, clock=clock, sleep=sleep)
    other = limits.bucket("http://x/v1#def", "requests", 49.0, 0.2, clock=clock, sleep=sleep)
    assert one is two and one is not other and one.shared
    again = limits.bucket("http://x/v1#abc", "requests", 40.0, 0.2, clock=clock, sleep=sleep)  # a new limit
    assert again is one and one.target == 40.0 and one.rate == 40.0  # retuned in place
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and all("abc" not in f and "def" not in f for f in files)  # digests, not keys
    limits.forget()
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", "off")
    assert not limits.bucket("k", "requests", 1.0, 1.0, clock=clock, sleep=sleep).shared
    limits.forget()


def test_a_bucket_made_while_other_batches_probe_starts_below_the_announced_remaining(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two batches of one key probe at once; the first reply says 49 remain, perhaps before the other probe
    reached the server: the request bucket starts at 48, and the token bucket (no count of the probe's tokens) at
    what was announced. Answered probes count no more."""
    async def sleep(seconds: float) -> None:
        raise AssertionError("no wait expected")

    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", "off")
    clock, limits = Clock(), KeyLimits()
    limits.probe_sent("k")
    limits.probe_sent("k")
    limits.probe_answered("k")  # the reply being read: its own request is counted in what it announces
    assert limits.bucket("k", "requests", 50.0, 1.0, clock=clock, sleep=sleep, level=49).level == 48
    assert limits.bucket("k", "tokens", 500.0, 1.0, clock=clock, sleep=sleep, level=490).level == 490
    limits.probe_sent("j")
    limits.probe_answered("j")
    assert limits.bucket("j", "requests", 50.0, 1.0, clock=clock, sleep=sleep, level=49).level == 49
    limits.probe_answered("k")
    limits.forget()
    assert limits.bucket("k", "requests", 50.0, 1.0, clock=clock, sleep=sleep, level=49).level == 49


def test_open_files_are_raised_to_the_hard_limit_or_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    from holysheep.batch import ensure_open_files

    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 8192))
    monkeypatch.setattr(resource, "setrlimit", lambda which, value: calls.append(value))
    assert ensure_open_files(3000) == 3256 and calls == [(3256, 8192)]
    assert ensure_open_files(500) == 1024 and len(calls) == 1  # enough already: nothing changed
    with pytest.raises(InvalidRequestError, match=r"concurrency=9000 needs about 9,256 open files.*8,192.*ulimit -n"):
        ensure_open_files(9000)


def test_a_batch_refuses_too_many_in_flight_before_any_request(tmp_path: Path) -> None:
    """In a child whose hard RLIMIT_NOFILE is 600: concurrency=1000 is refused and nothing reaches the server."""
    import subprocess
    import sys

    from holysheep.testing import FakeServer

    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (512, 600))\n"
        "from holysheep import Client, InvalidRequestError\n"
        "c = Client(api_key=sys.argv[2], base_url=sys.argv[1])\n"
        "try:\n"
        "    c.chat.completions.batch(['a'] * 5, model='gpt-4.1', concurrency=1000)\n"
        "except InvalidRequestError as e:\n"
        "    print('refused:', e)\n"
    )
    with FakeServer() as server:
        out = subprocess.run([sys.executable, "-c", code, server.url, server.api_key], capture_output=True, text=True,
                             timeout=60)
        assert "refused: concurrency=1000 needs about 1,256 open files" in out.stdout, out.stderr
        assert server.requests == []


@pytest.mark.scale  # a long run: the `scale` group of .ci/run, not the default pytest
def test_concurrency_above_1000_puts_that_many_in_flight() -> None:
    """The pool is sized to the batch: at concurrency=1500 against a 1.5 s server, 1,500 requests are in
    flight at once (the server counts them), not 1,000. (The first request goes alone: rpm="auto" learns the
    server's limits from its reply, so 1,501 items.)"""
    import asyncio

    from holysheep import AsyncClient
    from holysheep.testing import FakeServer

    with FakeServer(latency=1.5) as server:
        async def main() -> object:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                return await client.chat.completions.batch([f"p{i}" for i in range(1501)], model="gpt-4.1",
                                                           concurrency=1500, check_quota=False)

        results = asyncio.run(main())
        assert server.max_in_flight == 1500
    assert sum(r.ok for r in results) == 1501  # type: ignore[attr-defined]

"""Issue 35, item 2: state kept between processes is private. The rate-limit folder is 0700 and refused (one
warning, a private fallback) when another user owns it or may write it; a link planted inside is not
followed; a planted absurd bucket state is ignored, never a stall; the cache file and its -wal/-shm are 0600."""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import tempfile
from pathlib import Path

import pytest

from holysheep import _private_state as private_state
from holysheep._engine.key_limits import KeyLimits, SharedBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _no_sleep(seconds: float) -> None:  # pragma: no cover - never awaited here
    raise AssertionError(seconds)


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A temp directory of the test's own, and the warnings and fallback of a new process."""
    monkeypatch.setattr(private_state, "_warned", set())
    monkeypatch.setattr(private_state, "_fallback", None)
    monkeypatch.delenv("HOLYSHEEP_LIMITS_DIR", raising=False)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _bucket(key: str = "https://api|hs_key") -> SharedBucket:
    return KeyLimits().bucket(key, "requests", 10.0, 1.0, clock=Clock(), sleep=_no_sleep)


def _file_name(key: str = "https://api|hs_key") -> str:
    return hashlib.sha256(f"{key}|requests".encode()).hexdigest()[:32] + ".bucket"


def test_the_default_folder_is_made_0700_and_used(fresh_process: Path) -> None:
    bucket = _bucket()
    folder = fresh_process / f"holysheep-{os.getuid()}"
    assert bucket.shared
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "limits").stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "limits" / _file_name()).stat().st_mode) == 0o600
    bucket.close()


@pytest.mark.parametrize("level", ["top", "limits"])
def test_a_folder_others_may_write_is_refused_with_one_warning_and_a_private_fallback(
        fresh_process: Path, level: str) -> None:
    planted = fresh_process / f"holysheep-{os.getuid()}" / "limits"
    planted.mkdir(parents=True)
    (planted if level == "limits" else planted.parent).chmod(0o777)
    with pytest.warns(UserWarning, match=r"can be written by other users \(mode 0777\).*private folder") as seen:
        a, b = _bucket("k1"), _bucket("k2")
    assert len(seen) == 1  # one warning, not one per bucket
    assert a.shared and b.shared  # in the fallback, still shared by this process's batches
    assert list(planted.iterdir()) == []  # nothing written where others could read or change it
    fallback = private_state._fallback
    assert fallback is not None and stat.S_IMODE(fallback.stat().st_mode) == 0o700
    assert sorted(p.name for p in fallback.iterdir()) == sorted([_file_name("k1"), _file_name("k2")])
    a.close()
    b.close()


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown to another uid needs root")
def test_a_folder_another_user_owns_is_refused(fresh_process: Path) -> None:
    planted = fresh_process / f"holysheep-{os.getuid()}"
    (planted / "limits").mkdir(parents=True, mode=0o700)
    os.chown(planted, 12345, 12345)
    with pytest.warns(UserWarning, match=r"belongs to another user \(uid 12345; you are uid 0\)"):
        bucket = _bucket()
    assert list((planted / "limits").iterdir()) == []
    bucket.close()


def test_a_link_planted_in_the_folder_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "limits"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(folder))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"the first 32 bytes of a file of the victim, and more\n")
    (folder / _file_name()).symlink_to(victim)
    with pytest.warns(UserWarning, match="is a symbolic link: holysheep does not follow it"):
        bucket = _bucket()
    assert not bucket.shared  # the state lives in this process
    assert [bucket.take_now(1) for _ in range(11)] == [True] * 10 + [False]
    assert victim.read_bytes() == b"the first 32 bytes of a file of the victim, and more\n"


def test_a_hard_link_planted_in_the_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "limits"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(folder))
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"x" * 40)
    os.link(victim, folder / _file_name())
    with pytest.warns(UserWarning, match="not a regular file of yours with one name"):
        bucket = _bucket()
    bucket.take_now(1)
    assert not bucket.shared and victim.read_bytes() == b"x" * 40


@pytest.mark.parametrize("planted", [
    (-1e9, 1000.0, 10.0, 0.0),  # a debt of 10^9 requests: "the next request in 10^8 s"
    (0.0, 1000.0, 1e-5, 0.0),  # a rate of one request a day
    (float("nan"), 1000.0, 10.0, 0.0),
    (10.0, 1e12, 10.0, 0.0),  # stamped in the future
])
def test_a_planted_absurd_state_is_ignored_never_a_stall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        planted: tuple[float, ...]) -> None:
    folder = tmp_path / "limits"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(folder))
    (folder / _file_name()).write_bytes(struct.pack("<dddd", *planted))
    with pytest.warns(UserWarning, match="held a state no batch writes"):
        bucket = _bucket()
    assert bucket.shared
    assert (bucket.delay_for(1), bucket.rate, bucket.level) == (0.0, 10.0, 10.0)  # a fresh bucket
    bucket.close()


def test_a_plausible_state_of_another_process_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "limits"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(folder))
    (folder / _file_name()).write_bytes(struct.pack("<dddd", -5.0, 1000.0, 0.5, 999.0))  # after 429s: 5 % rate
    bucket = _bucket()
    assert bucket.delay_for(1) == pytest.approx(12.0)  # (1 + 5) / 0.5: the other process's backoff holds
    bucket.close()


def test_the_cache_file_and_its_wal_are_0600(tmp_path: Path) -> None:
    from holysheep.cache import SQLiteCache

    cache = SQLiteCache(tmp_path / "c" / "responses.db")
    cache.put("k", b"{}")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "c").iterdir()}
    cache.close()
    assert modes == {"responses.db": 0o600, "responses.db-wal": 0o600, "responses.db-shm": 0o600}


def test_a_batch_runs_to_the_end_past_a_planted_next_request_in_a_day(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: another local user planted "the next request in 10^8 s" for the victim's key before the batch
    started (the issue's reproduction stopped the batch after 1 of 50 items)."""
    import time

    from holysheep import Client
    from holysheep._clients.senders import limits_key
    from holysheep._engine.key_limits import forget_limits
    from holysheep.testing import FakeServer

    folder = tmp_path / "limits"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("HOLYSHEEP_LIMITS_DIR", str(folder))
    forget_limits()
    try:
        with FakeServer(rpm_limit=60000) as server, Client(base_url=server.url, api_key=server.api_key) as client:
            name = hashlib.sha256(f"{limits_key(client)}|requests".encode()).hexdigest()[:32] + ".bucket"
            (folder / name).write_bytes(struct.pack("<dddd", -1e9, time.monotonic(), 1000.0, 0.0))
            with pytest.warns(UserWarning, match="held a state no batch writes"):
                results = client.chat.completions.batch(
                    [{"model": "deepseek-v3.2", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(8)],
                    check_quota=False)
        assert [r.error for r in results] == [None] * 8
    finally:
        forget_limits()

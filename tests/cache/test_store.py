"""The response cache's stores and keys: SQLite WAL file, TTL and size limits, canonical keys, kill -9
survival and two processes sharing one file (real subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from holysheep._exceptions import InvalidRequestError
from holysheep.cache import CacheStore, MemoryCache, ResponseCache, SQLiteCache, open_cache, request_key
from holysheep.types.chat import ChatCompletion

KEY = "hs_TestKey0123456789abcdefWXYZ"
BODY = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0.0}
COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4.1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_sqlite_roundtrip_is_wal_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.db"
    store = SQLiteCache(path)
    assert isinstance(store, CacheStore)
    assert store.get("a") is None
    store.put("a", b"one", model="m1", cost_usd=0.5)
    store.put("b", b"three", model="m2")
    store.put("a", b"uno!", model="m1", cost_usd=0.25)  # replaced, not added
    assert store.get("a") == b"uno!"
    stats = store.stats()
    assert (stats.entries, stats.bytes, stats.stored_cost_usd) == (2, 9, 0.25)
    assert stats.by_model == {"m1": 1, "m2": 1}
    store.record_hits(3, 1.5)
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    again = SQLiteCache(path)
    assert (again.stats().hits, again.stats().saved_usd) == (3, 1.5)
    assert again.clear() == 2
    assert (again.stats().entries, again.stats().bytes, again.stats().hits) == (0, 0, 0)
    again.close()


def test_ttl_hides_then_deletes_old_entries(tmp_path: Path) -> None:
    clock = Clock()
    store = SQLiteCache(tmp_path / "c.db", ttl_s=60, clock=clock)
    store.put("old", b"x")
    clock.now += 59.0
    assert store.get("old") == b"x"
    clock.now += 1.0
    assert store.get("old") is None  # exactly ttl_s old: expired
    assert store.stats().entries == 0
    store.put("new", b"y")  # a write deletes what expired
    raw = sqlite3.connect(tmp_path / "c.db")
    assert [r[0] for r in raw.execute("SELECT key FROM entries")] == ["new"]
    raw.close()
    store.close()


def test_size_limits_drop_the_oldest_first(tmp_path: Path) -> None:
    clock = Clock()
    store = SQLiteCache(tmp_path / "c.db", max_entries=3, clock=clock)
    for i in range(5):
        clock.now += 1
        store.put(f"k{i}", b"0123456789")
    assert [store.get(f"k{i}") is not None for i in range(5)] == [False, False, True, True, True]
    assert store.stats().entries == 3
    store.close()
    sized = SQLiteCache(tmp_path / "d.db", max_bytes=25, clock=clock)
    for i in range(4):
        clock.now += 1
        sized.put(f"k{i}", b"0123456789")
    assert sized.stats().bytes == 20
    assert [sized.get(f"k{i}") is not None for i in range(4)] == [False, False, True, True]
    sized.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_bad_limits_are_typed_errors(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidRequestError, match="max_entries must be a positive integer"):
        SQLiteCache(tmp_path / "c.db", max_entries=bad)  # type: ignore[arg-type]


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequestError, match="is a folder"):
        open_cache(tmp_path)


def test_key_is_canonical_and_every_parameter_counts() -> None:
    base = request_key(BODY, base_url="https://api.example/v1")
    assert base is not None and len(base) == 64
    reordered = {"temperature": 0.0, "messages": [{"content": "Hi", "role": "user"}], "model": "gpt-4.1"}
    assert request_key(reordered, base_url="https://api.example/v1/") == base
    assert request_key({**BODY, "temperature": 0.5}, base_url="https://api.example/v1") != base
    assert request_key({**BODY, "seed": 1}, base_url="https://api.example/v1") != base
    assert request_key({**BODY, "model": "gpt-4o"}, base_url="https://api.example/v1") != base
    assert request_key(BODY, base_url="https://other.example/v1") != base
    # credentials in the URL never reach the key (nor the file)
    assert request_key(BODY, base_url=f"https://user:{KEY}@api.example/v1") == base
    assert request_key({**BODY, "x": object()}) is None  # no canonical form: not cached
    assert request_key({**BODY, "temperature": float("nan")}) is None


def test_response_cache_hit_marks_cached_and_counts_saving(tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "c.db")
    key = cache.key(BODY)
    assert key is not None
    assert cache.get(key) is None
    response = ChatCompletion.model_validate(COMPLETION)
    response._set_transport(("req-123", 2, 0.5, "primary"))
    cache.put(key, response)
    hit = cache.get(key)
    assert hit is not None
    assert hit.model_dump() == response.model_dump()
    assert (hit.served_by, hit.request_id, hit.retries_taken) == ("cache", None, 0)
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.saved_usd == pytest.approx(response.cost or 0)
    assert response.cost == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)
    cache.put(key, hit)  # a hit is never written back
    cache.close()
    raw = (tmp_path / "c.db").read_bytes() + (tmp_path / "c.db-wal").read_bytes() \
        if (tmp_path / "c.db-wal").exists() else (tmp_path / "c.db").read_bytes()
    assert b"req-123" not in raw and KEY.encode() not in raw and b"uthorization" not in raw
    assert SQLiteCache(tmp_path / "c.db").stats().hits == 1
    assert cache.key({**BODY, "stream": True}) is None


def test_a_damaged_entry_is_a_miss() -> None:
    store = MemoryCache()
    cache = ResponseCache(store)
    store.put("k", b"{not json")
    assert cache.get("k") is None and cache.misses == 1


def test_memory_store_implements_the_interface() -> None:
    clock = Clock()
    store = MemoryCache(ttl_s=10, max_entries=2, clock=clock)
    assert isinstance(store, CacheStore)
    for k in "abc":
        store.put(k, k.encode(), model="m")
    assert (store.get("a"), store.get("c")) == (None, b"c")
    clock.now += 10
    assert store.get("c") is None
    assert store.stats().by_model == {"m": 2}
    assert open_cache(store).store is store


WRITER = textwrap.dedent("""
    import sys
    from holysheep.cache import SQLiteCache
    store = SQLiteCache(sys.argv[1])
    prefix, count = sys.argv[2], int(sys.argv[3])
    if sys.argv[4] == "go":
        import os, time
        while not os.path.exists(sys.argv[1] + ".go"):
            time.sleep(0.005)
    i = 0
    while count < 0 or i < count:
        store.put(f"{prefix}{i}", (f"value {prefix}{i} " * 40).encode(), model=prefix)
        print(i, flush=True)
        i += 1
    store.close()
""")


def _writer(path: Path, prefix: str, count: int, wait: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), prefix, str(count), "go" if wait else "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_kill_9_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    proc = _writer(path, "k", -1)  # writes until killed
    assert proc.stdout is not None
    committed = -1
    deadline = time.monotonic() + 60
    while committed < 200 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        committed = int(line)
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of its next writes
    rest, _ = proc.communicate(timeout=30)
    for line in rest.split():
        committed = int(line)  # printed after its commit returned: must be there too
    assert proc.returncode == -signal.SIGKILL
    assert committed >= 200
    store = SQLiteCache(path)
    assert all(store.get(f"k{i}") == (f"value k{i} " * 40).encode() for i in range(committed + 1))
    entries = store.stats().entries
    assert entries >= committed + 1  # the writer may have committed more than it got to print before the kill
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = {row[0] for row in db.execute("SELECT key FROM entries")}
    assert keys == {f"k{i}" for i in range(entries)}  # no hole, no half-written entry
    db.close()


def test_two_processes_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteCache(path).close()
    procs = [_writer(path, p, 300, wait=True) for p in ("a", "b")]
    time.sleep(0.3)  # both are waiting on the start file
    (tmp_path / "shared.db.go").write_text("")
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.split()[-1] == "299"
    store = SQLiteCache(path)
    stats = store.stats()
    assert (stats.entries, stats.by_model) == (600, {"a": 300, "b": 300})
    assert store.get("a17") == ("value a17 " * 40).encode() and store.get("b299") is not None
    store.close()
    # a response one process stored is a hit in another
    cache = open_cache(path)
    key = cache.key(BODY)
    assert key is not None
    cache.put(key, ChatCompletion.model_validate(COMPLETION))
    cache.close()
    reader = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from holysheep.cache import open_cache
        c = open_cache({str(path)!r})
        r = c.get({key!r})
        print(r.choices[0].message.content, r.served_by)
        c.close()
    """)], capture_output=True, text=True, timeout=60)
    assert reader.stdout.split() == ["Hello!", "cache"], reader.stderr
    assert json.loads(ChatCompletion.model_validate(COMPLETION).model_dump_json())["id"] == "chatcmpl-1"


def _track_closes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection SQLite opens from here on records its close (any Python: 3.13 alone warns)."""
    import sqlite3

    closed: list[str] = []

    class Tracked(sqlite3.Connection):
        def close(self) -> None:
            closed.append("closed")
            super().close()

    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: real(*a, factory=Tracked, **kw))
    return closed


def test_a_store_nobody_closed_closes_its_connection_when_collected(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    closed = _track_closes(monkeypatch)
    store = SQLiteCache(tmp_path / "c.db")
    store.put("k", b"v")
    del store
    gc.collect()
    assert closed == ["closed"]
    with SQLiteCache(tmp_path / "c.db") as again:  # a context manager too
        assert again.get("k") == b"v"
    assert closed == ["closed", "closed"]


def test_a_client_nobody_closed_closes_its_cache_file_when_collected(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import holysheep

    closed = _track_closes(monkeypatch)
    client = holysheep.Client(api_key="hs_" + "k" * 40, base_url="http://127.0.0.1:9/v1", cache=tmp_path / "c.db")
    assert client.cache is not None and closed == []
    del client
    gc.collect()
    assert closed == ["closed"]

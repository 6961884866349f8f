"""Issue 35, item 3: the response cache is optional in failure too. A damaged, locked, read-only or full cache
logs one warning and the calls go on uncached (create, sync and async, batch, run_jsonl); ``close()`` never raises
for it. A file that is not a cache is refused at ``Client(cache=...)`` with `CacheFileError` naming it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from holysheep import AsyncClient, CacheFileError, Client, InvalidRequestError
from holysheep.batch import arun_jsonl, run_jsonl
from holysheep.cache import MemoryCache, SQLiteCache
from holysheep.testing import FakeServer

MODEL = "deepseek-v3.2"


def _ask(i: int) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": f"question {i}"}]}


def _cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "holysheep.cache" and r.levelno == logging.WARNING]


def test_a_garbage_file_is_refused_at_construction_naming_it(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.db"
    garbage.write_bytes(b"these are my notes, not a database\n" * 200)
    for make in (lambda: Client(api_key="hs_" + "a" * 20, cache=garbage),
                 lambda: AsyncClient(api_key="hs_" + "a" * 20, cache=garbage)):
        with pytest.raises(CacheFileError) as info:
            make()
        assert str(garbage) in str(info.value) and "not a holysheep response cache" in str(info.value)
        assert info.value.path == str(garbage) and info.value.field == "cache"
        assert isinstance(info.value, InvalidRequestError)  # CLI: exit 2
    assert garbage.read_bytes() == b"these are my notes, not a database\n" * 200  # untouched


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(other)) as db, db:  # sqlite3's own `with` commits, never closes
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(CacheFileError, match=r"a SQLite database of something else \(its tables: users\)"):
        SQLiteCache(other)
    with contextlib.closing(sqlite3.connect(other)) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["users"]


def test_the_cli_refuses_a_garbage_cache_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep.cli import main

    monkeypatch.setenv("HOLYSHEEP_API_KEY", "restored-after-the-test")  # `batch` exports --api-key there

    garbage, src = tmp_path / "c.db", tmp_path / "in.jsonl"
    garbage.write_bytes(b"\x00garbage" * 100)
    src.write_text(json.dumps({"custom_id": "a", **_ask(0)}) + "\n")
    with FakeServer() as server:
        code = main(["--base-url", server.url, "--api-key", server.api_key, "batch", str(src), "-o",
                     str(tmp_path / "out.jsonl"), "--cache", str(garbage), "--no-progress"])
        assert server.requests == []
    assert code == 2 and str(garbage) in capsys.readouterr().err


def _damaged_cache(path: Path, server: FakeServer, where: str) -> None:
    """A real cache with entries, then damaged: every page but the first ("open": the schema is readable, the
    tables are not), or only the pages of the entries and their key index ("read": it opens, lookups fail)."""
    with Client(base_url=server.url, api_key=server.api_key, cache=path) as client:
        for i in range(30):
            client.chat.completions.create(**_ask(i))
    with sqlite3.connect(path) as db:
        roots = [r[0] for r in db.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'entries' "
                                          "AND name != 'entries_created'")]
    db.close()
    data = bytearray(path.read_bytes())
    if where == "open":
        data[4096:] = b"\xa5" * (len(data) - 4096)
    else:
        for page in roots:
            data[(page - 1) * 4096:page * 4096] = b"\xa5" * 4096
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["open", "read"])
@pytest.mark.parametrize("kind", ["sync", "aiohttp"])
def test_a_damaged_cache_is_one_warning_and_calls_go_on_uncached(tmp_path: Path, kind: str, where: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "responses.db"
    with FakeServer() as server:
        _damaged_cache(path, server, where)
        server.reset()
        if kind == "sync":
            with Client(base_url=server.url, api_key=server.api_key, cache=path) as client:
                answers = [client.chat.completions.create(**_ask(i)) for i in range(5)]
                results = client.chat.completions.batch([_ask(i) for i in range(5, 9)])
        else:
            async def go() -> tuple[list[Any], Any]:
                async with AsyncClient(base_url=server.url, api_key=server.api_key, cache=path) as client:
                    answers = [await client.chat.completions.create(**_ask(i)) for i in range(5)]
                    return answers, await client.chat.completions.batch([_ask(i) for i in range(5, 9)])

            answers, results = asyncio.run(go())
        assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 9  # all sent
    assert all(a.choices[0].message.content and not a.cached for a in answers)
    assert len(results) == 4 and all(r.error is None for r in results)
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0] and "go on uncached" in warnings[0]
    assert ("opening it failed" if where == "open" else "reading failed") in warnings[0]


class _FailingStore(MemoryCache):
    """A store whose writes fail as a full, locked or read-only SQLite file's do."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
        self.path = "/somewhere/responses.db"

    def put(self, key: str, value: bytes, *, model: str = "", cost_usd: float | None = None) -> None:
        raise self.error

    def record_hits(self, hits: int, saved_usd: float) -> None:
        raise self.error

    def close(self) -> None:
        raise self.error


@pytest.mark.parametrize("error", [sqlite3.OperationalError("database is locked"),
                                   sqlite3.OperationalError("attempt to write a readonly database"),
                                   sqlite3.OperationalError("database or disk is full"), OSError(28, "No space")])
def test_a_store_that_fails_to_write_is_one_warning_and_close_never_raises(
        tmp_path: Path, error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    store = _FailingStore(error)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"r{i}", **_ask(i)}) + "\n" for i in range(4)))
    with FakeServer() as server:
        with Client(base_url=server.url, api_key=server.api_key, cache=store) as client:
            client.chat.completions.create(**_ask(0))
            client.chat.completions.create(**_ask(0))  # the first was not stored: asked again
            assert run_jsonl(client, src, tmp_path / "out.jsonl").succeeded == 4

        async def go() -> Any:
            async with AsyncClient(base_url=server.url, api_key=server.api_key, cache=_FailingStore(error)) as aclient:
                await aclient.chat.completions.create(**_ask(0))
                return await arun_jsonl(aclient, src, tmp_path / "out2.jsonl")

        assert asyncio.run(go()).succeeded == 4
        assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 2 + 4 + 1 + 4
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 2 and all(str(error) in w for w in warnings)  # one per client, none from close()


def test_a_cache_another_program_keeps_locked_is_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "responses.db"
    store = SQLiteCache(path, busy_timeout_s=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program holds the write lock and does not let go
    try:
        with FakeServer() as server:
            with Client(base_url=server.url, api_key=server.api_key, cache=store) as client:
                answers = [client.chat.completions.create(**_ask(0)) for _ in range(3)]
                assert client.cache is not None and "database is locked" in str(client.cache.off)
            assert len(server.requests) == 3 and not any(a.cached for a in answers)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(_cache_warnings(caplog)) == 1


READ_ONLY = textwrap.dedent("""
    import os, sys
    from holysheep import Client
    from holysheep.testing import FakeServer

    path = os.path.join(sys.argv[1], "responses.db")
    ask = lambda c, i: c.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": f"q{i}"}])
    with FakeServer() as server:
        with Client(base_url=server.url, api_key=server.api_key, cache=path) as client:
            ask(client, 0)
        os.chmod(path, 0o444)
        if os.geteuid() == 0:  # root writes a 0444 file anyway: be nobody from here on
            os.setgid(65534)
            os.setuid(65534)
        with Client(base_url=server.url, api_key=server.api_key, cache=path) as client:
            for i in range(1, 4):
                assert ask(client, i).choices
            off = client.cache.off
        print("requests", len(server.requests), "off", off is not None)
""")


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_read_only_cache_file_is_one_warning_and_calls_go_on_uncached() -> None:
    where = tempfile.mkdtemp()  # not under tmp_path: as root the script drops to nobody, who must reach it
    try:
        os.chmod(where, 0o755)
        done = subprocess.run([sys.executable, "-c", READ_ONLY, where], capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["requests", "4", "off", "True"]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    # (as root the script is nobody, and the file root's: refused as another user's file before SQLite opens it)
    assert len(lines) == 1 and "go on uncached" in lines[0], done.stderr
    assert "readonly" in lines[0] or "belongs to another user (uid 0" in lines[0], done.stderr


FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, like a full disk
    from holysheep import Client
    from holysheep.testing import FakeServer

    path = sys.argv[1]
    with FakeServer() as server:
        resource.setrlimit(resource.RLIMIT_FSIZE, (96 * 1024, resource.RLIM_INFINITY))
        with Client(base_url=server.url, api_key=server.api_key, cache=path) as client:
            for i in range(40):
                r = client.chat.completions.create(model="deepseek-v3.2",
                                                   messages=[{"role": "user", "content": f"q{i} " + "x" * 3000}])
                assert r.choices[0].message.content
            off = client.cache.off
        print("requests", len(server.requests), "off", off is not None)
""")


def test_a_full_disk_is_one_warning_and_leaving_the_client_does_not_raise(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path / "responses.db")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["requests", "40", "off", "True"]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "response cache" in lines[0] and "full" in lines[0], done.stderr

"""``SQLiteCache``: the response cache's embedded store, one SQLite file in WAL mode (standard library).

Safety:

- **Several processes share one file.** WAL mode lets readers run beside one writer; writers take
  the file's write lock in turn (``BEGIN IMMEDIATE``) and wait up to ``busy_timeout_s`` for it.
- **A killed process loses nothing committed.** Every ``put`` is one transaction; once it returns,
  the entry is in the WAL file, and SQLite recovers the WAL when the next connection opens it.
  ``synchronous=NORMAL`` (the WAL default that SQLite recommends) survives a killed process; only a
  power cut or an OS crash may lose the last commits (``durable=True`` makes every commit wait for
  the disk).

Sizes: ``max_entries`` and ``max_bytes`` (the size of the stored bodies) are enforced in the same
transaction as each write, oldest entries first; ``ttl_s`` hides entries older than it on reads, and
writes delete them.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from holysheep._exceptions import CacheFileError, InvalidRequestError
from holysheep.cache._store import CacheStats

__all__ = ["SQLiteCache"]

SCHEMA_VERSION = 1
_SQLITE_NOTADB = 26  # "file is not a database"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, created REAL NOT NULL, model TEXT NOT NULL DEFAULT '', "
    "cost_usd REAL, body BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entries_created ON entries (created)",
    "CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL, "
    "entries INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0, hits INTEGER NOT NULL DEFAULT 0, "
    "saved_usd REAL NOT NULL DEFAULT 0)",
    f"INSERT OR IGNORE INTO meta (id, version) VALUES (1, {SCHEMA_VERSION})",
    # The counts in meta follow every change, so the size limits are checked without scanning the table.
    "CREATE TRIGGER IF NOT EXISTS entries_ins AFTER INSERT ON entries BEGIN "
    "UPDATE meta SET entries = entries + 1, bytes = bytes + length(NEW.body) WHERE id = 1; END",
    "CREATE TRIGGER IF NOT EXISTS entries_del AFTER DELETE ON entries BEGIN "
    "UPDATE meta SET entries = entries - 1, bytes = bytes - length(OLD.body) WHERE id = 1; END",
    "CREATE TRIGGER IF NOT EXISTS entries_upd AFTER UPDATE OF body ON entries BEGIN "
    "UPDATE meta SET bytes = bytes - length(OLD.body) + length(NEW.body) WHERE id = 1; END",
)


def _check_limit(value: float | None, name: str, *, integer: bool) -> None:
    if value is None:
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value <= 0:
        kind = "a positive integer" if integer else "a positive number"
        raise InvalidRequestError(f"{name} must be {kind} or None, got {value!r}.", field=name)


def _create_private(path: Path) -> None:
    """Create a missing cache file 0600 before SQLite opens it: SQLite gives its ``-wal`` and ``-shm`` files the
    database file's mode, so the cached prompts and answers stay readable by this user only."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:  # it exists (kept as it is), or cannot be made (connect says why)
        return
    os.close(fd)


class SQLiteCache:
    """A ``CacheStore`` in one SQLite file (created with its folder when missing).

    ``ttl_s``: entries older than this many seconds are misses (and are deleted by the next write);
    ``max_entries`` / ``max_bytes``: the oldest entries go first when a write goes over.
    ``busy_timeout_s``: how long a write waits while another process writes.
    Safe to share between threads and between processes.
    """

    def __init__(self, path: str | os.PathLike[str], *, ttl_s: float | None = None, max_entries: int | None = None,
                 max_bytes: int | None = None, busy_timeout_s: float = 30.0, durable: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        _check_limit(ttl_s, "ttl_s", integer=False)
        _check_limit(max_entries, "max_entries", integer=True)
        _check_limit(max_bytes, "max_bytes", integer=True)
        self.path = Path(path)
        if self.path.is_dir():
            raise InvalidRequestError(f"cache path {self.path} is a folder; name a file, e.g. "
                                      f"{self.path / 'cache.db'}.", field="cache")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new folder: only this user writes it
        _create_private(self.path)
        self.ttl_s, self.max_entries, self.max_bytes = ttl_s, max_entries, max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._closed = True  # until the connection is open: __del__ has nothing to close
        try:
            self._db = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise InvalidRequestError(f"cannot open the cache file {self.path}: {exc}.", field="cache") from exc
        try:
            self._open(busy_timeout_s, durable)
        except BaseException:
            self._db.close()
            raise
        self._closed = False

    def _open(self, busy_timeout_s: float, durable: bool) -> None:
        """Check that the file is a cache of this format (`CacheFileError` if not), then set it up."""
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        try:
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", None) != _SQLITE_NOTADB and "not a database" not in str(exc):
                raise  # damaged, locked, unreadable: the response cache goes on without it (one warning)
            raise CacheFileError(f"the cache file {self.path} is not a holysheep response cache: SQLite cannot "
                                 f"read it as a database ({exc}). Name a new file for cache= (--cache), or delete "
                                 "this one if nothing else uses it.", path=str(self.path)) from None
        if tables and not {"entries", "meta"} <= tables:
            raise CacheFileError(f"the cache file {self.path} is a SQLite database of something else (its tables: "
                                 f"{', '.join(sorted(tables)[:5])}), not a holysheep response cache; name a new file "
                                 "for cache= (--cache).", path=str(self.path))
        self._set_wal()
        self._db.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
        with self._write() as db:
            for statement in _SCHEMA:
                db.execute(statement)
            version = db.execute("SELECT version FROM meta WHERE id = 1").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise CacheFileError(f"the cache file {self.path} has format {version}, this holysheep reads "
                                 f"{SCHEMA_VERSION}; use another file or delete this one.", path=str(self.path))

    def _set_wal(self) -> None:
        """WAL mode (kept in the file). Two processes opening a new file at once may collide here: retry."""
        for attempt in range(50):
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise InvalidRequestError(f"the cache file {self.path} cannot use WAL mode (got {mode!r}); "
                                              "put it on a local disk.", field="cache")
                return
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.02)

    def _write(self) -> _WriteTxn:
        return _WriteTxn(self)

    def get(self, key: str) -> bytes | None:
        """The stored body for ``key``; None when absent or older than ``ttl_s``."""
        with self._lock:
            row = self._db.execute("SELECT body, created FROM entries WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        if self.ttl_s is not None and row[1] <= self._clock() - self.ttl_s:
            return None
        body: bytes = row[0]
        return body

    def put(self, key: str, value: bytes, *, model: str = "", cost_usd: float | None = None) -> None:
        """Store ``value`` under ``key`` in one transaction (committed when this returns), then delete
        expired entries and the oldest ones over ``max_entries`` / ``max_bytes``."""
        now = self._clock()
        with self._write() as db:
            db.execute("INSERT INTO entries (key, created, model, cost_usd, body) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT(key) DO UPDATE SET created = excluded.created, model = excluded.model, "
                       "cost_usd = excluded.cost_usd, body = excluded.body",
                       (key, now, model, cost_usd, sqlite3.Binary(value)))
            self._trim(db, now)

    def _trim(self, db: sqlite3.Connection, now: float) -> None:
        if self.ttl_s is not None:
            db.execute("DELETE FROM entries WHERE created <= ?", (now - self.ttl_s,))
        if self.max_entries is None and self.max_bytes is None:
            return
        count, size = db.execute("SELECT entries, bytes FROM meta WHERE id = 1").fetchone()
        if self.max_entries is not None and count > self.max_entries:
            db.execute("DELETE FROM entries WHERE key IN (SELECT key FROM entries ORDER BY created LIMIT ?)",
                       (count - self.max_entries,))
            size = db.execute("SELECT bytes FROM meta WHERE id = 1").fetchone()[0]
        while self.max_bytes is not None and size > self.max_bytes:
            row = db.execute("SELECT key, length(body) FROM entries ORDER BY created LIMIT 1").fetchone()
            if row is None:
                break
            db.execute("DELETE FROM entries WHERE key = ?", (row[0],))
            size -= row[1]

    def record_hits(self, hits: int, saved_usd: float) -> None:
        """Add to the file's hit counters (one small transaction)."""
        if hits <= 0 or self._closed:
            return
        with self._write() as db:
            db.execute("UPDATE meta SET hits = hits + ?, saved_usd = saved_usd + ? WHERE id = 1", (hits, saved_usd))

    def stats(self) -> CacheStats:
        """What the file holds (expired entries not yet deleted are not counted)."""
        cutoff = self._clock() - self.ttl_s if self.ttl_s is not None else float("-inf")
        with self._lock:
            db = self._db
            hits, saved = db.execute("SELECT hits, saved_usd FROM meta WHERE id = 1").fetchone()
            entries, size, cost, oldest, newest = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(length(body)), 0), COALESCE(SUM(cost_usd), 0), MIN(created), "
                "MAX(created) FROM entries WHERE created > ?", (cutoff,)).fetchone()
            by_model = dict(db.execute("SELECT model, COUNT(*) FROM entries WHERE created > ? GROUP BY model "
                                       "ORDER BY COUNT(*) DESC", (cutoff,)).fetchall())
        return CacheStats(str(self.path), entries, size, round(cost, 9), hits, round(saved, 9), oldest, newest,
                          self.ttl_s, self.max_entries, self.max_bytes, by_model)

    def clear(self) -> int:
        """Delete every entry and reset the hit counters; how many entries there were."""
        with self._write() as db:
            n: int = db.execute("SELECT entries FROM meta WHERE id = 1").fetchone()[0]
            db.execute("DELETE FROM entries")
            db.execute("UPDATE meta SET hits = 0, saved_usd = 0 WHERE id = 1")
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A store nobody closed (its client garbage-collected unclosed): close the connection, so none is left
        # for the garbage collector (Python 3.13 reports such a connection with a ResourceWarning).
        if not getattr(self, "_closed", True):
            self._closed = True
            self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r}, ttl_s={self.ttl_s!r}, max_entries={self.max_entries!r}, " \
               f"max_bytes={self.max_bytes!r})"


class _WriteTxn:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error), holding the store's thread lock."""

    def __init__(self, store: SQLiteCache) -> None:
        self._store = store

    def __enter__(self) -> sqlite3.Connection:
        self._store._lock.acquire()
        try:
            self._store._db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._store._lock.release()
            raise
        return self._store._db

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            self._store._db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self._store._lock.release()

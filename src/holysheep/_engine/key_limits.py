"""One rate limit per (base URL, key): the buckets every batch of this process shares, and that the
processes of one machine share through a small file under a lock.

A server's ``x-ratelimit-*`` limit belongs to the key, not to one batch. ``KeyLimits.for_key`` hands
every batch that uses the same base URL and key the same ``SharedBucket`` per limit (requests, tokens).
A ``SharedBucket`` keeps its state (level, time stamp, rate) in a 32-byte file under
``HOLYSHEEP_LIMITS_DIR`` (default: a private folder in the temp directory), read and written under
``flock``, so batches in other processes on this machine take from the same bucket. When the file
cannot be used (no ``fcntl``, a read-only folder, ``HOLYSHEEP_LIMITS_DIR=off``) the bucket lives in
this process only.

The bucket's rate follows AIMD: a 429 lowers it (x0.7, at most once per second), successes raise it
back toward the share of the announced limit by a tenth of that share per second. Every reply's
``x-ratelimit-remaining-*`` caps the level: what remains on the server is the truth about what other
clients of the key have used.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import struct
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar, cast

from holysheep._private_state import open_private_file, private_folder, warn_once

__all__ = ["KEY_LIMITS", "KeyLimits", "SharedBucket", "Sleep", "forget_limits", "limits_dir"]

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

_STATE = struct.Struct("<dddd")  # level, stamp (monotonic, machine-wide on Linux), rate, last decrease
DECREASE = 0.7
"""Factor a 429 applies to the rate of a learned bucket."""
INCREASE_PER_S = 0.1
"""Share of the target rate the rate grows back by per second of successes."""
FLOOR = 0.05
"""The rate never goes below this share of the target."""
STALE_S = 120.0
"""A bucket file nobody touched for this long is started afresh (its rate and level are from another run)."""
MAX_DEBT_S = 60.0
"""A shared level below minus (capacity + this many seconds of the target rate) is not a state any batch
writes: the file is ignored (started afresh), never a stall."""


def limits_dir() -> Path | None:
    """Where the machine-wide bucket files live (None: keep limits in this process)."""
    raw = os.environ.get("HOLYSHEEP_LIMITS_DIR")
    if raw is not None and raw.strip().lower() in ("", "off", "0", "none"):
        return None
    if raw:
        return Path(raw)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"holysheep-{uid}" / "limits"


def _open_state(folder: Path | None, name: str) -> int | None:
    """A file descriptor of the bucket file ``name`` (created 0600, not through a link) in a folder private to
    this user (see `private_state`), or None: the bucket then lives in this process."""
    if folder is None:
        return None
    try:
        import fcntl  # noqa: F401  (POSIX only)
    except ImportError:  # pragma: no cover - Windows
        return None
    default = os.environ.get("HOLYSHEEP_LIMITS_DIR") is None
    private = private_folder(folder, top=Path(tempfile.gettempdir()) if default else None,
                             what="rate-limit folder", setting="HOLYSHEEP_LIMITS_DIR")
    if private is None:
        return None
    with contextlib.suppress(OSError):
        _sweep(private)
    return open_private_file(private / name, "rate-limit file")


_swept: set[Path] = set()


def _sweep(folder: Path) -> None:
    """Once per process and folder: remove bucket files nobody used for a day (one per base URL and key)."""
    if folder in _swept:
        return
    _swept.add(folder)
    cutoff = time.time() - 86_400
    for path in folder.glob("*.bucket"):
        with contextlib.suppress(OSError):
            if path.lstat().st_mtime < cutoff:  # a link is removed, never followed
                path.unlink()


class SharedBucket:
    """A token bucket (``rate`` units per second, at most ``capacity``) shared by every batch of one key.

    ``target`` is the rate the server's limit allows us; ``rate`` is the AIMD rate now (<= target).
    With a file descriptor the state lives in the file (other processes see it); else in memory.
    The interface is ``TokenBucket``'s: ``delay_for``, ``take_now``, ``take``, ``adjust``, plus
    ``charge`` (take even when it goes into debt), ``cap`` (the server's remaining), ``on_rate_limited``
    and ``on_success``.
    """

    _format = _STATE
    """The layout of the state in the file (a subclass with more state has its own)."""

    def __init__(self, target: float, capacity_s: float, *, level: float | None = None, fd: int | None = None,
                 clock: Clock = time.monotonic, sleep: Sleep | None = None) -> None:
        import asyncio

        self.target = target
        self.capacity_s = capacity_s
        self._fd = fd
        self._clock = clock
        self._sleep: Sleep = sleep or asyncio.sleep
        self._lock = threading.Lock()
        self._state = [self.capacity if level is None else level, clock(), target, 0.0]  # above: announced burst
        self._seen_rate = target
        if fd is not None:
            with self._locked(refill=False) as state:
                now = clock()
                if state[1] == 0.0 or not 0 <= now - state[1] <= STALE_S or state[2] <= 0:
                    state[:] = [self._state[0], now, target, 0.0]  # a new (or stale) file: this process starts it
                else:  # another process of this key is running: keep its level and rate, under this limit
                    self._refill(state)
                    state[2] = min(state[2], target)
                    if level is not None:
                        state[0] = min(state[0], level)

    @property
    def capacity(self) -> float:
        return max(1.0, self.target * self.capacity_s)

    @property
    def shared(self) -> bool:
        """True when the state is in a file other processes can use."""
        return self._fd is not None

    @contextlib.contextmanager
    def _locked(self, refill: bool = True) -> Iterator[list[float]]:
        """The state (level, stamp, rate, last decrease), refilled to now; written back on exit."""
        fd = self._fd
        with self._lock:
            if fd is None:
                state = self._state
                if refill:
                    self._refill(state)
                yield state
                self._seen_rate = state[2]
                return
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                layout = self._format
                raw = os.pread(fd, layout.size, 0)
                state = list(layout.unpack(raw)) if len(raw) == layout.size else [0.0] * (layout.size // 8)
                if state[1] != 0.0 and not self._plausible(state):
                    state = self._fresh()  # started afresh
                if refill and state[1] != 0.0 and state[2] > 0:
                    self._refill(state)
                yield state
                self._seen_rate = state[2]
                os.pwrite(fd, layout.pack(*state), 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _fresh(self) -> list[float]:
        """The state of a bucket nobody used yet (what an implausible shared state is replaced with)."""
        return [self.capacity, self._clock(), self.target, 0.0]

    def _plausible(self, state: list[float]) -> bool:
        """Whether a state read from the shared file is one a batch of this limit could have written: finite,
        not from the future, a rate between ``FLOOR`` and the target, and a debt of at most ``MAX_DEBT_S`` of
        it. Anything else (a planted "next request in a day") is ignored with one warning."""
        level, stamp, rate, last = state[:4]
        now = self._clock()
        ok = (all(math.isfinite(v) for v in state) and stamp <= now + 1.0 and last <= now + 1.0
              and (rate <= 0 or self.target * FLOOR * (1 - 1e-9) <= rate)
              and level >= -(self.capacity + MAX_DEBT_S * self.target))
        if not ok:
            warn_once("limits-state", "A shared rate-limit file held a state no batch writes (a wait far beyond the "
                      "announced limit, or numbers that are not finite): it was ignored and started afresh.")
        return ok

    def _refill(self, state: list[float]) -> None:
        now = self._clock()
        elapsed = now - state[1]
        capacity = self.capacity
        if elapsed > 0 and state[0] < capacity:  # a level above capacity is an announced burst: spent, not refilled
            state[0] = min(capacity, state[0] + elapsed * state[2])
        state[1] = now

    # ------------------------------------------------------------------ TokenBucket's interface
    @property
    def rate(self) -> float:
        with self._locked() as state:
            return state[2]

    @property
    def level(self) -> float:
        with self._locked() as state:
            return state[0]

    def delay_for(self, amount: float) -> float:
        with self._locked() as state:
            return self._delay(state, amount)

    def _delay(self, state: list[float], amount: float) -> float:
        need = min(amount, self.capacity)
        return 0.0 if state[0] >= need - 1e-9 else (need - state[0]) / state[2]

    def take_now(self, amount: float) -> bool:
        with self._locked() as state:
            if self._delay(state, amount) > 0:
                return False
            state[0] -= amount
            return True

    async def take(self, amount: float) -> None:
        while True:
            with self._locked() as state:
                delay = self._delay(state, amount)
                if delay <= 0:
                    state[0] -= amount
                    return
            await self._sleep(delay)

    def adjust(self, delta: float) -> None:
        with self._locked() as state:
            state[0] = min(max(self.capacity, state[0]), state[0] + delta)

    # ------------------------------------------------------------------ what the server says
    def cap(self, remaining: float) -> None:
        """The server says ``remaining`` units are left for the key: the level is never above that."""
        with self._locked() as state:
            if remaining < state[0]:
                state[0] = remaining

    def on_rate_limited(self) -> bool:
        """A 429: lower the rate (x``DECREASE``, at most once a second) and empty the bucket. True when lowered."""
        with self._locked() as state:
            now = self._clock()
            state[0] = min(state[0], 0.0)
            if now - state[3] < 1.0:
                return False
            state[3] = now
            state[2] = max(self.target * FLOOR, state[2] * DECREASE)
            return True

    def on_success(self) -> None:
        """A success: grow the rate back toward the target (a tenth of it per second of successes)."""
        if self._seen_rate >= self.target:
            return  # the usual case: no lock, no file
        with self._locked() as state:
            if 0 < state[2] < self.target:
                state[2] = min(self.target, state[2] + INCREASE_PER_S * self.target / state[2])

    def retune(self, target: float) -> None:
        """The announced limit changed: follow it in place (the level is kept; a lower target lowers the
        rate at once, a higher one is reached by the additive increase)."""
        if target <= 0:
            raise ValueError(f"rate must be > 0, got {target}")
        with self._locked() as state:
            self.target = target
            state[0] = min(state[0], self.capacity)
            state[2] = min(state[2], target) if state[2] > 0 else target
        self._seen_rate = min(self._seen_rate, target)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


_Bucket = TypeVar("_Bucket", bound=SharedBucket)


class KeyLimits:
    """The buckets of each (base URL, key) in this process: ``bucket`` hands out one per limit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], SharedBucket] = {}
        self._probes: dict[str, int] = {}  # per key: first requests of batches still waiting for their reply
        self._keys: set[str] = set()  # the (base URL, key)s with a bucket, whatever its model scope

    def known(self, key: str) -> bool:
        """True when ``key`` (base URL and key digest, `limits_key`) has a bucket of any model: one set lookup, what
        a client's request asks before anything else."""
        return key in self._keys

    def peek(self, key: str, kind: str) -> SharedBucket | None:
        """The bucket of ``key``'s ``kind`` limit when one was made, else None (a dict lookup; makes nothing)."""
        return self._buckets.get((key, kind))

    def _made(self, key: str) -> None:
        self._keys.add(key.split("|model=", 1)[0])

    def bucket(self, key: str, kind: str, rate: float, burst_s: float, *, clock: Clock, sleep: Sleep,
               level: float | None = None) -> SharedBucket:
        """The shared bucket for ``key``'s ``kind`` limit ("requests" or "tokens") at ``rate`` per second (the
        share of the announced limit already applied); a changed limit retunes it in place. A new bucket starts
        at ``level`` (what the server says remains: its burst, spent at once, then the pace follows the refill)."""
        with self._lock:
            current = self._buckets.get((key, kind))
            if current is not None:
                if current.target != rate:
                    current.retune(rate)
                return current
            name = hashlib.sha256(f"{key}|{kind}".encode()).hexdigest()[:32] + ".bucket"
            fd = _open_state(limits_dir(), name)
            if level is not None and kind == "requests":  # other batches' first requests may not be counted yet
                level = max(0.0, level - self._probes.get(key, 0))
            bucket = SharedBucket(rate, burst_s, level=level, fd=fd, clock=clock, sleep=sleep)
            self._buckets[(key, kind)] = bucket
            self._made(key)
            return bucket

    def probe_sent(self, key: str) -> None:
        """A batch of ``key`` sent its first request (before it knows the limits). Until its reply, a bucket
        made from another batch's first reply starts that much lower: the ``remaining`` it announces may not
        count this request yet (two batches starting together would otherwise spend one request too many)."""
        with self._lock:
            self._probes[key] = self._probes.get(key, 0) + 1

    def probe_answered(self, key: str) -> None:
        """That first request got its reply (or failed)."""
        with self._lock:
            left = self._probes.get(key, 0) - 1
            if left > 0:
                self._probes[key] = left
            else:
                self._probes.pop(key, None)

    def made(self, key: str, kind: str, make: Callable[[int | None], _Bucket]) -> _Bucket:
        """``key``'s bucket of ``kind``, made by ``make(fd)`` (the bucket file's descriptor, or None) the first
        time: a bucket with state of its own (the learned pace) shared like the others."""
        with self._lock:
            current = self._buckets.get((key, kind))
            if current is None:
                name = hashlib.sha256(f"{key}|{kind}".encode()).hexdigest()[:32] + ".bucket"
                current = self._buckets[(key, kind)] = make(_open_state(limits_dir(), name))
            return cast(_Bucket, current)

    def forget(self) -> None:
        """Drop every bucket (a later batch starts afresh)."""
        with self._lock:
            for bucket in self._buckets.values():
                bucket.close()
            self._buckets.clear()
            self._probes.clear()
            self._keys.clear()


KEY_LIMITS = KeyLimits()
"""The process-wide buckets."""


def forget_limits() -> None:
    """Forget every rate limit this process learned (the next batch asks the server again). Bucket files that
    other processes share stay; they start afresh once nobody used them for two minutes."""
    from holysheep._engine.server_limits import LIMITS_MEMORY

    KEY_LIMITS.forget()
    LIMITS_MEMORY.forget()

"""What one response may cost, whatever the server does: bytes after decompression, and time per attempt.

Pure pieces that any transport can drive (the httpx and aiohttp shells use the helpers at the bottom):

- `BoundedDecoder` inflates gzip/deflate in pieces of at most 64 KiB, so a compression bomb never
  expands more than one piece beyond what the caller has accepted.
- `BodyReader` collects a non-stream body and raises `ResponseTooLargeError` as soon as the decoded
  size passes ``max_response_bytes``.
- `attempt_seconds` turns the ``timeout`` setting into a deadline for the whole attempt; `Deadline`
  checks it between reads and `within_deadline` enforces it on an awaitable.
- `IdleClock` measures ``stream_idle_timeout`` in SSE events, not bytes (comment lines do not reset it).
"""

from __future__ import annotations

import math
import time
import weakref
import zlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx

from ._exceptions import ResponseTooLargeError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "BodyReader",
    "BoundedDecoder",
    "Deadline",
    "DeadlineTimer",
    "IdleClock",
    "aiter_decoded",
    "attempt_seconds",
    "check_limit",
    "iter_decoded",
    "read_aiohttp_body",
    "read_body",
    "read_body_async",
    "within_deadline",
]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a non-stream body, after decompression (64 MiB)
PIECE = 65536  # the most one inflate step may produce

_T = TypeVar("_T")


def check_limit(name: str, value: object) -> int:
    """Validate a byte limit (an integer >= 1) and return it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        from ._exceptions import InvalidRequestError

        raise InvalidRequestError(f"{name} must be an integer number of bytes >= 1, got {value!r}.", field=name)
    return value


class _Inflater:
    __slots__ = ("_obj", "_raw_deflate", "_started")

    def __init__(self, encoding: str) -> None:
        self._raw_deflate = encoding == "deflate"
        self._started = False
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding != "deflate" else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        obj = self._obj
        if self._raw_deflate and not self._started:
            self._started = True
            try:  # "deflate" is zlib-wrapped by the standard, raw by some servers
                zlib.decompressobj().decompress(data[:2])
            except zlib.error:
                obj = self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
        buf = data
        while True:
            try:
                out = obj.decompress(buf, PIECE)
            except zlib.error as exc:
                raise httpx.DecodingError(f"could not decompress the response body: {exc}") from None
            buf = obj.unconsumed_tail
            if out:
                yield out
            if obj.eof or (not buf and len(out) < PIECE):
                return

    def flush(self) -> Iterator[bytes]:
        yield from self.decode(b"")


class BoundedDecoder:
    """Decodes a ``Content-Encoding`` chain (gzip, x-gzip, deflate, identity), at most `PIECE` bytes per step."""

    __slots__ = ("_stages",)

    def __init__(self, content_encoding: str | None) -> None:
        names = [n.strip().lower() for n in (content_encoding or "").split(",") if n.strip()]
        stages: list[_Inflater] = []
        for name in reversed(names):  # the last encoding applied is undone first
            if name in ("identity", ""):
                continue
            if name not in ("gzip", "x-gzip", "deflate"):
                raise httpx.DecodingError(f"the server used Content-Encoding {name!r}, which was not asked for")
            stages.append(_Inflater("deflate" if name == "deflate" else "gzip"))
        self._stages = stages

    @property
    def inflates(self) -> bool:
        """False for an identity body (the bytes are the body)."""
        return bool(self._stages)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data`` (each at most 64 KiB when the body is compressed)."""
        if not self._stages:
            if data:
                yield data
            return
        yield from self._through(0, data)

    def _through(self, i: int, data: bytes) -> Iterator[bytes]:
        stage = self._stages[i]
        if i == len(self._stages) - 1:
            yield from stage.decode(data)
            return
        for piece in stage.decode(data):
            yield from self._through(i + 1, piece)

    def flush(self) -> Iterator[bytes]:
        """Whatever the decompressors still hold at the end of the body."""
        for i, stage in enumerate(self._stages):
            for piece in stage.flush():
                if i == len(self._stages) - 1:
                    yield piece
                else:
                    yield from self._through(i + 1, piece)


def too_large(limit: int) -> ResponseTooLargeError:
    return ResponseTooLargeError(
        f"The response body is larger than {limit} bytes after decompression (the max_response_bytes limit); "
        "the connection was closed and the call was not retried. Raise max_response_bytes on the client if "
        "this server is trusted and really returns bodies that large.", limit=limit)


class BodyReader:
    """Collects a body from raw (possibly compressed) pieces, never holding more than ``limit`` decoded bytes."""

    __slots__ = ("_decoder", "_identity", "_parts", "limit", "total")

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        self._decoder = BoundedDecoder(content_encoding)
        self._identity = not self._decoder.inflates
        self._parts: list[bytes] = []
        self.limit = limit
        self.total = 0

    def feed(self, raw: bytes) -> None:
        """Add raw bytes; raises `ResponseTooLargeError` once the decoded size passes the limit."""
        if self._identity:  # the common case, without a generator per piece
            self.total += len(raw)
            if self.total > self.limit:
                self._parts.clear()
                raise too_large(self.limit)
            self._parts.append(raw)
            return
        self._add(self._decoder.decode(raw))

    def _add(self, pieces: Iterator[bytes]) -> None:
        for piece in pieces:
            self.total += len(piece)
            if self.total > self.limit:
                self._parts.clear()
                raise too_large(self.limit)
            self._parts.append(piece)

    def finish(self) -> bytes:
        """The whole decoded body."""
        if not self._identity:
            self._add(self._decoder.flush())
        parts = self._parts
        return parts[0] if len(parts) == 1 else b"".join(parts)


def attempt_seconds(timeout: httpx.Timeout) -> float | None:
    """The deadline of one whole attempt for a ``timeout`` setting.

    ``Client(timeout=3)`` gives every attempt 3 s in all (connect, send, headers and body together),
    on top of the per-phase limits. With an ``httpx.Timeout`` the deadline is its largest phase limit;
    ``read=None`` means no deadline.
    """
    if timeout.read is None:
        return None
    parts = [v for v in (timeout.connect, timeout.read, timeout.write, timeout.pool) if v is not None]
    return max(parts)


class Deadline:
    """A point in time after which an attempt is abandoned (``clock`` is injectable for tests)."""

    __slots__ = ("_clock", "at", "seconds")

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self.at = None if seconds is None else clock() + seconds

    def check(self) -> None:
        """Raise ``httpx.ReadTimeout`` (mapped to `APITimeoutError`, retryable) once the deadline has passed."""
        if self.at is not None and self._clock() > self.at:
            raise deadline_error(self.seconds)


def deadline_error(seconds: float | None) -> httpx.ReadTimeout:
    return httpx.ReadTimeout(f"the attempt took longer than its {seconds:g} s deadline (timeout=)")


_PENDING, _DONE, _FIRED = 0, 1, 2


class DeadlineTimer:
    """Every attempt deadline of one event loop on a single loop timer.

    A ``loop.call_later`` per attempt (a ``TimerHandle`` pushed on the loop's heap, then cancelled) costs
    more than the rest of the deadline bookkeeping. Here each deadline is an entry in a FIFO per duration
    (entries of one duration expire in the order they were added), and one timer is armed for the
    earliest head. Finished entries are dropped from the heads at once and compacted away when a slow
    attempt holds a head, so memory follows the attempts in flight.
    """

    __slots__ = ("__weakref__", "_active", "_at", "_handle", "_loop", "_queues", "_time")

    def __init__(self, loop: Any) -> None:
        self._loop = loop
        self._time = loop.time  # the loop's clock (call_at counts in it)
        self._queues: dict[float, deque[list[Any]]] = {}
        self._handle: Any = None
        self._at = math.inf
        self._active = 0

    def add(self, task: Any, seconds: float) -> list[Any]:
        """Cancel ``task`` after ``seconds`` unless `done` is called first; the entry to pass to `done`."""
        at = self._time() + seconds
        entry = [at, task, _PENDING, seconds]
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = deque()
        queue.append(entry)
        self._active += 1
        if at < self._at:
            self._arm(at)
        return entry

    def done(self, entry: list[Any]) -> bool:
        """Retire an entry; True when its deadline had fired (the task was cancelled by it)."""
        if entry[2] != _PENDING:  # retired already (idempotent), or fired
            return bool(entry[2] == _FIRED)
        entry[2] = _DONE
        self._active -= 1
        queue = self._queues.get(entry[3])
        if queue is not None:
            while queue and queue[0][2] != _PENDING:
                queue.popleft()
            if len(queue) > 4 * self._active + 64:  # a slow head holds finished entries behind it
                self._queues[entry[3]] = deque(e for e in queue if e[2] == _PENDING)
        return False

    def _arm(self, at: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._at = at
        self._handle = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._at = math.inf
        now = self._loop.time()
        earliest = math.inf
        for seconds, queue in list(self._queues.items()):
            while queue and (queue[0][2] != _PENDING or queue[0][0] <= now):
                entry = queue.popleft()
                if entry[2] == _PENDING:
                    entry[2] = _FIRED
                    self._active -= 1
                    entry[1].cancel()
            if queue:
                earliest = min(earliest, queue[0][0])
            else:
                del self._queues[seconds]
        if earliest < math.inf:
            self._arm(earliest)


_timer_of: tuple[Any, DeadlineTimer | None] = (None, None)  # (weakref to the last loop, its timer)
_timers: weakref.WeakKeyDictionary[Any, DeadlineTimer] = weakref.WeakKeyDictionary()


def _deadline_timer(loop: Any) -> DeadlineTimer:
    global _timer_of
    ref, timer = _timer_of
    if timer is not None and ref() is loop:
        return timer
    timer = _timers.get(loop)
    if timer is None:
        timer = _timers[loop] = DeadlineTimer(loop)
    _timer_of = (weakref.ref(loop), timer)
    return timer


async def within_deadline(awaitable: Awaitable[_T], seconds: float | None) -> _T:
    """Await ``awaitable``, abandoning it (cancelled, connection closed) after ``seconds``.

    Expiry raises ``httpx.ReadTimeout``, which the shells map to a retryable `APITimeoutError`.
    """
    if seconds is None:
        return await awaitable
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    assert task is not None
    timer = _deadline_timer(loop)
    entry = timer.add(task, seconds)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if not timer.done(entry):
            raise
        uncancel = getattr(task, "uncancel", None)
        if uncancel is not None:
            uncancel()
        raise deadline_error(seconds) from None
    finally:
        timer.done(entry)


class IdleClock:
    """``stream_idle_timeout`` counted in dispatched SSE events: bytes that complete no event (comment
    lines, keep-alive padding, an endless line) do not reset it."""

    __slots__ = ("_clock", "idle", "last", "seen")

    def __init__(self, idle: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self._clock = clock
        self.last = clock()
        self.seen = 0

    def expired(self, events: int) -> bool:
        """True when no new event arrived for longer than ``idle`` seconds (``events`` is the running count)."""
        now = self._clock()
        if events != self.seen:
            self.seen = events
            self.last = now
            return False
        return now - self.last > self.idle


# --- transport helpers: used by the httpx shells and the aiohttp backend ---------------------------------


def read_body(response: httpx.Response, limit: int, deadline: Deadline | None = None) -> None:
    """Read a streamed httpx response into ``response.content``, bounded in size and time; always closes it."""
    reader = BodyReader(response.headers.get("content-encoding"), limit)
    try:
        for raw in response.iter_raw():
            reader.feed(raw)
            if deadline is not None:
                deadline.check()
        response._content = reader.finish()
    finally:
        response.close()


async def read_body_async(response: httpx.Response, limit: int, deadline: Deadline | None = None) -> None:
    """`read_body` for an async httpx response."""
    reader = BodyReader(response.headers.get("content-encoding"), limit)
    try:
        async for raw in response.aiter_raw():
            reader.feed(raw)
            if deadline is not None:
                deadline.check()
        response._content = reader.finish()
    finally:
        await response.aclose()


async def read_aiohttp_body(resp: Any, limit: int) -> bytes:
    """Read an aiohttp response opened with ``auto_decompress=False``, bounded by ``limit`` decoded bytes.

    Releases the connection after a complete body; closes it when the limit is passed or reading fails.
    """
    ok = False
    try:
        body = await _read_aiohttp(resp, limit)
        ok = True
        return body
    finally:
        if ok:
            resp.release()
        else:
            resp.close()


async def _read_aiohttp(resp: Any, limit: int) -> bytes:
    length = resp.content_length
    encoding = resp.headers.get("Content-Encoding")
    if (length is not None and length <= limit and encoding in (None, "", "identity")
            and "Transfer-Encoding" not in resp.headers):
        # The parser stops at Content-Length, so the body cannot pass the limit (and no reader per piece).
        body: bytes = await resp.read()
        return body
    reader = BodyReader(encoding, limit)
    async for raw in resp.content.iter_chunked(PIECE):
        reader.feed(raw)
    return reader.finish()


def iter_decoded(response: httpx.Response) -> Iterator[bytes]:
    """A streamed httpx response's body, decompressed in bounded pieces."""
    decoder = BoundedDecoder(response.headers.get("content-encoding"))
    if not decoder.inflates:  # identity: the raw pieces as they come (no generator per piece)
        yield from response.iter_raw()
        return
    for raw in response.iter_raw():
        yield from decoder.decode(raw)
    yield from decoder.flush()


async def aiter_decoded(response: httpx.Response) -> AsyncIterator[bytes]:
    """`iter_decoded` for an async httpx response."""
    decoder = BoundedDecoder(response.headers.get("content-encoding"))
    if not decoder.inflates:
        async for raw in response.aiter_raw():
            yield raw
        return
    async for raw in response.aiter_raw():
        for piece in decoder.decode(raw):
            yield piece
    for piece in decoder.flush():
        yield piece

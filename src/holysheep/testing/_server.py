"""FakeServer: a local OpenAI-compatible HTTP/1.1 server on its own asyncio loop in a background thread.

This module holds its public API and its loop thread; requests are answered by `._endpoints` and
the foreground command (``holysheep mock-server``) is `serve` in `._serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from ._endpoints import EndpointHandler
from ._faults import FaultPlan, FaultsArg, FaultSpec, normalize_path
from ._replies import DEFAULT_MODELS, ReplySpec, new_api_key
from ._responses import Handler, RecordedRequest

__all__ = ["FakeServer"]


class FakeServer(EndpointHandler):
    """A real OpenAI-compatible HTTP/1.1 server on 127.0.0.1 for tests, with scripted replies and faults.

    Use ``with FakeServer() as server:`` (or ``start()``/``stop()``) and point a client at
    ``server.url`` with ``server.api_key``. Options are plain attributes and may be changed while it runs.
    ``sleep`` is what the server waits with (``latency``, ``stream_chunk_delay``), on its own loop thread:
    a test can pass one that records each delay to check the schedule exactly.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        require_auth: bool = True,
        reply: ReplySpec = "echo",
        latency: float = 0.0,
        stream_chunk_delay: float = 0.0,
        words_per_chunk: int = 1,
        faults: FaultsArg = None,
        fault_rate: float = 0.0,
        fault_mix: Mapping[FaultSpec, float] | Iterable[FaultSpec] | None = None,
        seed: int | None = None,
        fault_paths: Iterable[str] | None = ("/chat/completions",),
        models: Mapping[str, str] | Sequence[str] | None = None,
        strict_models: bool = False,
        quota_limit: int | None = 10_000_000,
        quota_used: int = 0,
        quota_reset_at: str | int | None = None,
        enforce_quota: bool = False,
        max_recorded: int | None = None,
        rpm_limit: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.host, self.port = host, port
        self.api_key = api_key if api_key is not None else new_api_key()
        self.require_auth = require_auth
        self.reply = reply
        self.latency, self.stream_chunk_delay = latency, stream_chunk_delay
        self.sleep = sleep
        self.words_per_chunk = words_per_chunk
        self.fault_plan = FaultPlan(faults, rate=fault_rate, mix=fault_mix, seed=seed, paths=fault_paths)
        models = DEFAULT_MODELS if models is None else models
        self.models = dict(models) if isinstance(models, Mapping) else dict.fromkeys(models, "holysheep")
        self.strict_models = strict_models
        self.quota_limit, self.quota_used, self.quota_reset_at = quota_limit, quota_used, quota_reset_at
        self.enforce_quota = enforce_quota
        self.rpm_limit = rpm_limit  # enforced on chat completions with x-ratelimit-* headers (one-second burst)
        self._rpm_level = rpm_limit / 60.0 if rpm_limit else 0.0
        self._rpm_stamp = time.monotonic()
        self.in_flight = self.max_in_flight = 0
        self.open_connections = self.connections_total = 0
        self._requests = deque(maxlen=max_recorded)
        self._lock = threading.Lock()
        self._handlers = {}
        self._conns = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._startup_error: BaseException | None = None
        self._gate = None

    # ----------------------------------------------------------------- public API
    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>/v1``."""
        if self.port == 0:
            raise RuntimeError("FakeServer is not started; its port is not known yet")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the request log, oldest first."""
        with self._lock:
            return list(self._requests)

    def set_faults(
        self,
        faults: FaultsArg = None,
        *,
        fault_rate: float = 0.0,
        fault_mix: Mapping[FaultSpec, float] | Iterable[FaultSpec] | None = None,
        seed: int | None = None,
        fault_paths: Iterable[str] | None = ("/chat/completions",),
    ) -> None:
        """Replace the fault plan (same arguments as the constructor)."""
        self.fault_plan = FaultPlan(faults, rate=fault_rate, mix=fault_mix, seed=seed, paths=fault_paths)

    def on(self, method: str, path: str, handler: Handler | None = None) -> Any:
        """Route ``method path`` (``/v1`` optional) to ``handler``; usable as a decorator.

        The handler runs on the server's loop thread, after auth, latency and faults. ``None`` removes it.
        """
        key = (method.upper(), normalize_path(path))
        if handler is None:
            self._handlers.pop(key, None)
            return lambda fn: self.on(method, path, fn)
        self._handlers[key] = handler
        return handler

    def reset(self) -> None:
        """Clear the request log and the peak counters (``max_in_flight``, ``connections_total``)."""
        with self._lock:
            self._requests.clear()
        self.max_in_flight = self.in_flight
        self.connections_total = self.open_connections

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no connection is open and no request is in flight; False on timeout."""
        return self._wait(lambda: not (self.open_connections or self.in_flight), timeout)

    def wait_in_flight(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until at least ``count`` requests are in flight; False on timeout. From async code:
        ``await asyncio.to_thread(server.wait_in_flight, count)``."""
        return self._wait(lambda: self.in_flight >= count, timeout)

    def hold(self) -> None:
        """Hold every request that arrives from now on: it is recorded and counted in ``in_flight``, then
        waits (before latency, auth and faults) until `release`. Exact concurrency tests hold, start N
        requests, ``wait_in_flight(N)``, assert, then release."""
        with self._lock:
            if self._gate is None:
                self._gate = asyncio.Event()

    def release(self) -> None:
        """Let the held requests (and every later one) go on; the opposite of `hold`."""
        with self._lock:
            gate, self._gate = self._gate, None
        if gate is None:
            return
        loop = self._loop
        if loop is None or not loop.is_running():
            gate.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing is held
                loop.call_soon_threadsafe(gate.set)

    @staticmethod
    def _wait(done: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def start(self) -> FakeServer:
        """Bind and start serving in a background thread; returns self."""
        if self._thread is not None:
            raise RuntimeError("FakeServer already started")
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="holysheep-fake-server", daemon=True
        )
        self._thread.start()
        if not ready.wait(10) or self._startup_error is not None:
            self._thread.join(1)
            self._thread = None
            raise RuntimeError(
                f"FakeServer could not start on {self.host}:{self.port}"
            ) from self._startup_error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listener and every open connection, end stalled requests, and join the thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = self._loop = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"url={self.url!r}" if self._thread is not None else "stopped"
        return f"<FakeServer {state} requests={len(self._requests)}>"

    # ----------------------------------------------------------------- loop thread
    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self.host, self.port, backlog=2048)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:
            self._startup_error = exc
            loop.close()
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._conns):
            writer.transport.abort()
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]  # every task on this loop is a connection's
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

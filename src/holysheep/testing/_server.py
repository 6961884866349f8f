"""FakeServer: a local OpenAI-compatible HTTP/1.1 server on its own asyncio loop in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._faults import FaultPlan, FaultsArg, FaultSpec, apply_fault, fault_response, normalize_path
from ._http import HTTPRequest, reset_connection, serve_connection, write_body, write_sse
from ._replies import (
    DEFAULT_MODELS,
    Handler,
    RecordedRequest,
    ReplySpec,
    Response,
    StreamReply,
    chat_endpoint,
    error_response,
    model_endpoint,
    models_list,
    new_api_key,
    new_id,
    quota_object,
)

__all__ = ["FakeServer", "serve"]

_ROUTES = {"/chat/completions": "POST", "/models": "GET", "/quota": "GET"}
Endpoint = Callable[[RecordedRequest], "Response | StreamReply"]


async def _until_eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError):
        while await reader.read(65536):
            pass


class FakeServer:
    """A real OpenAI-compatible HTTP/1.1 server on 127.0.0.1 for tests, with scripted replies and faults.

    Use ``with FakeServer() as server:`` (or ``start()``/``stop()``) and point a client at
    ``server.url`` with ``server.api_key``. Options are plain attributes and may be changed while it runs.
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
    ) -> None:
        self.host, self.port = host, port
        self.api_key = api_key if api_key is not None else new_api_key()
        self.require_auth = require_auth
        self.reply: ReplySpec = reply
        self.latency, self.stream_chunk_delay = latency, stream_chunk_delay
        self.words_per_chunk = words_per_chunk
        self.fault_plan = FaultPlan(faults, rate=fault_rate, mix=fault_mix, seed=seed, paths=fault_paths)
        models = DEFAULT_MODELS if models is None else models
        self.models = dict(models) if isinstance(models, Mapping) else dict.fromkeys(models, "holysheep")
        self.strict_models = strict_models
        self.quota_limit, self.quota_used, self.quota_reset_at = quota_limit, quota_used, quota_reset_at
        self.enforce_quota = enforce_quota
        self.in_flight = self.max_in_flight = 0
        self.open_connections = self.connections_total = 0
        self._requests: deque[RecordedRequest] = deque(maxlen=max_recorded)
        self._lock = threading.Lock()
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._conns: dict[asyncio.StreamWriter, asyncio.Task[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._startup_error: BaseException | None = None

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
        deadline = time.monotonic() + timeout
        while self.open_connections or self.in_flight:
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

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns[writer] = asyncio.current_task()  # type: ignore[assignment]
        self.open_connections += 1
        self.connections_total += 1
        try:
            await serve_connection(reader, writer, lambda req: self._serve_one(req, reader, writer))
        except asyncio.CancelledError:  # stop(); asyncio < 3.12 would log a cancelled handler task
            pass
        finally:
            self._conns.pop(writer, None)
            self.open_connections -= 1

    async def _serve_one(
        self, req: HTTPRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        body: Any = None
        if req.body:
            with contextlib.suppress(ValueError):
                body = json.loads(req.body)
        rec = RecordedRequest(req.method, req.path, req.headers, body, req.body, time.monotonic())
        rec.request_id, rec.query = new_id("req_"), req.query
        with self._lock:
            self._requests.append(rec)
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight
        try:
            return await self._dispatch(req, rec, reader, writer)
        finally:
            self.in_flight -= 1
            rec.finished_at = time.monotonic()

    async def _dispatch(
        self,
        req: HTTPRequest,
        rec: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if self.require_auth and not self._authorized(req.headers.get("authorization", "")):
            msg = "Incorrect API key provided. You can find your API key in the HolySheep dashboard."
            return await self._write(
                req, rec, writer, error_response(401, msg, "invalid_api_key", "invalid_api_key")
            )
        route = normalize_path(req.path) if req.path.startswith("/v1/") else ""
        handler = self._route(req.method, route)
        if handler is None:
            if _ROUTES.get(route, req.method) != req.method:
                msg = f"Method {req.method} is not allowed for {req.path}."
                return await self._write(req, rec, writer, error_response(405, msg, "invalid_request_error"))
            msg = f"Unknown request URL: {req.method} {req.path}. Please check the URL and method."
            return await self._write(
                req, rec, writer, error_response(404, msg, "invalid_request_error", "unknown_url")
            )
        fault = rec.fault = self.fault_plan.next(route)
        if fault is not None:
            if fault.kind == "reset":
                reset_connection(writer)
                return False
            if fault.kind == "stall":  # until stop(), the client hangs up, or `seconds` pass
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(_until_eof(reader), fault.seconds)
                    return False
            elif fault.kind in ("status", "unauthorized", "quota_exhausted"):
                return await self._write(req, rec, writer, fault_response(fault))
        try:
            result = handler(rec)
        except Exception as exc:
            result = error_response(500, f"FakeServer handler raised {exc!r}", "server_error")
        if fault is not None:
            result = apply_fault(fault, result)
        return await self._write(req, rec, writer, result)

    def _authorized(self, header: str) -> bool:
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.api_key

    def _route(self, method: str, route: str) -> Endpoint | None:
        builtin: Endpoint | None = None
        if method == "POST" and route == "/chat/completions":
            builtin = self._chat
        elif method == "GET" and route == "/models":
            builtin = lambda rec: Response(200, models_list(self.models))  # noqa: E731
        elif method == "GET" and route.startswith("/models/"):
            builtin = lambda rec: model_endpoint(route[len("/models/") :], self.models)  # noqa: E731
        elif method == "GET" and route == "/quota":
            builtin = self._quota
        custom = self._handlers.get((method, route))
        if custom is None:
            return builtin

        def call_custom(rec: RecordedRequest) -> Response | StreamReply:
            result = custom(rec)
            if result is None:
                if builtin is None:
                    return error_response(
                        404, f"Unknown request URL: {method} {rec.path}.", "invalid_request_error"
                    )
                return builtin(rec)
            return result if isinstance(result, (Response, StreamReply)) else Response(200, dict(result))

        return call_custom

    # ----------------------------------------------------------------- built-in endpoints
    def _chat(self, rec: RecordedRequest) -> Response | StreamReply:
        exhausted = (
            self.enforce_quota and self.quota_limit is not None and self.quota_used >= self.quota_limit
        )
        result, tokens = chat_endpoint(
            rec.body,
            self.reply,
            models=self.models,
            strict_models=self.strict_models,
            words_per_chunk=self.words_per_chunk,
            quota_exhausted=exhausted,
        )
        self.quota_used += tokens
        return result

    def _quota(self, rec: RecordedRequest) -> Response:
        if self.quota_limit is None:
            return error_response(404, "This server does not report a quota.", "invalid_request_error")
        return Response(200, quota_object(self.quota_limit, self.quota_used, self.quota_reset_at))

    async def _write(
        self,
        req: HTTPRequest,
        rec: RecordedRequest,
        writer: asyncio.StreamWriter,
        result: Response | StreamReply,
    ) -> bool:
        headers = [("x-request-id", rec.request_id), *result.headers.items()]
        keep, cut = req.keep_alive, result.cut
        if isinstance(result, Response):
            data, content_type = result.encode()
            rec.status = result.status
            await write_body(writer, result.status, data, content_type, headers, keep_alive=keep, cut=cut)
        else:
            rec.status = 200
            paced = range(2, result.content_events + 1)
            delay = self.stream_chunk_delay
            await write_sse(
                writer, result.events, headers, keep_alive=keep, cut=cut, delay=delay, paced=paced
            )
        return keep and not cut


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    latency_ms: float = 0.0,
    fault_rate: float = 0.0,
    api_key: str | None = None,
    *,
    stream_chunk_delay_ms: float = 0.0,
    seed: int | None = None,
) -> None:
    """Run a FakeServer in the foreground (``holysheep mock-server``) until Ctrl-C or SIGTERM.

    Prints one line with the base URL and the API key to use; keeps the last 1,000 requests in memory.
    """
    server = FakeServer(
        host=host, port=port, api_key=api_key, latency=latency_ms / 1000, fault_rate=fault_rate, seed=seed,
        stream_chunk_delay=stream_chunk_delay_ms / 1000, max_recorded=1000,
    )  # fmt: skip

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    try:
        server.start()
        print(f"holysheep mock server at {server.url} api key {server.api_key} (Ctrl-C to stop)", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if in_main:
            signal.signal(signal.SIGTERM, previous)

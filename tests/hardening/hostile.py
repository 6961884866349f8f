"""Small hostile HTTP/1.1 servers on 127.0.0.1 for hardening tests (raw asyncio, one thread per server).

A scenario is ``async def scenario(req: Req, writer: asyncio.StreamWriter) -> None``; it writes whatever
bytes it likes. Every request is recorded, and `closed_by_client` is set when the client hangs up while the
scenario is still writing (so a test can check that the SDK closed the connection).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Req:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Scenario = Callable[[Req, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class HostileServer:
    scenario: Scenario
    requests: list[Req] = field(default_factory=list)
    closed_by_client: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: Any = None
    _stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, _, v = line.partition(":")
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                req = Req(method, path, headers, body)
                self.requests.append(req)
                await self.scenario(req, writer)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_by_client.set()
        except asyncio.CancelledError:
            pass
        finally:
            writer.close()

    def __enter__(self) -> HostileServer:
        ready = threading.Event()
        loop = self._loop = asyncio.new_event_loop()
        stop = self._stop = asyncio.Event()

        async def main() -> None:
            # One coroutine from start to shutdown: a stop asked for before the server is up is not lost
            # (with run_until_complete + run_forever, an early loop.stop ended the first, not the second).
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            await stop.wait()
            self._server.close()
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        def run() -> None:
            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(5):
            raise RuntimeError("the hostile server did not start within 5 s")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)
        assert not self._thread.is_alive(), "the hostile server's thread did not stop within 5 s"


def head(status: int = 200, content_type: str = "application/json", **extra: str) -> bytes:
    """A response head with no Content-Length: the body runs until the connection closes."""
    lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", "connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def fixed(status: int, body: bytes, content_type: str = "application/json", **extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", f"content-length: {len(body)}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def write_forever(writer: asyncio.StreamWriter, piece: bytes, pause: float = 0.0,
                        limit: int = 2 * 1024**3) -> None:
    """Write ``piece`` until the client hangs up (or ``limit`` bytes: a safety net for broken tests)."""
    sent = 0
    while sent < limit:
        writer.write(piece)
        await writer.drain()
        sent += len(piece)
        if pause:
            await asyncio.sleep(pause)
        else:
            await asyncio.sleep(0)
        if writer.is_closing():
            raise ConnectionResetError

"""Servers the network tests run on 127.0.0.1: a proxy (forwarding and CONNECT) and a TLS front for FakeServer.

Both map made-up host names (``api.test``) to 127.0.0.1, so a client that goes through the proxy never resolves
them itself: a request that bypassed the proxy fails to connect instead of passing silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class Seen:
    """One request as the proxy saw it (the first on its connection)."""

    method: str
    target: str
    headers: dict[str, str]


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    def _start(self, factory: Any, ssl_ctx: ssl.SSLContext | None = None) -> None:
        self._thread.start()

        async def start() -> asyncio.Server:
            return await asyncio.start_server(factory, "127.0.0.1", 0, ssl=ssl_ctx)

        self._server = asyncio.run_coroutine_threadsafe(start(), self.loop).result(5)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
            await asyncio.sleep(0)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = raw.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, target, headers, raw


class Proxy(_LoopThread):
    """An HTTP proxy: absolute-form requests are forwarded, ``CONNECT host:port`` is tunnelled.

    ``hosts`` maps names to ``(host, port)`` upstreams (a name it does not know gets a 502). ``seen`` lists what
    arrived; ``auth`` (``"user:pass"``) makes it demand ``Proxy-Authorization: Basic ...`` (else 407)."""

    def __init__(self, hosts: dict[str, tuple[str, int]], *, auth: str | None = None) -> None:
        super().__init__()
        self.hosts = hosts
        self.auth = auth
        self.seen: list[Seen] = []

    def __enter__(self) -> Proxy:
        self._start(self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _upstream(self, authority: str) -> tuple[str, int] | None:
        host, _, port = authority.rpartition(":")
        found = self.hosts.get(host.strip("[]")) or self.hosts.get(authority)
        if found is None:
            return None
        return found[0], found[1] if found[1] else int(port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await _read_head(reader)
        if head is None:
            writer.close()
            return
        method, target, headers, raw = head
        self.seen.append(Seen(method, target, headers))
        if self.auth is not None:
            import base64

            expected = "Basic " + base64.b64encode(self.auth.encode()).decode()
            if headers.get("proxy-authorization") != expected:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                await writer.drain()
                writer.close()
                return
        if method == "CONNECT":
            upstream = self._upstream(target)
        else:
            from urllib.parse import urlsplit

            parts = urlsplit(target)
            upstream = self._upstream(f"{parts.hostname}:{parts.port or 80}")
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            lines = raw.decode("latin-1").split("\r\n")
            lines[0] = f"{method} {path} HTTP/1.1"
            lines = [ln for ln in lines if not ln.lower().startswith("proxy-")]
            raw = "\r\n".join(lines).encode("latin-1")
        if upstream is None:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*upstream)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            up_writer.write(raw)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


def _linger_close(conn: Any) -> None:
    import socket

    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(1.0)
        while conn.recv(65536):
            pass
    conn.close()


class TLSFront:
    """Terminates TLS with ``server_ctx`` and pipes the plain bytes to ``upstream`` (a FakeServer's port).

    Blocking sockets in threads (not asyncio): OpenSSL then sends its alert when it refuses a handshake, as a
    real server (nginx) does, so the client sees "alert certificate required" rather than a bare EOF."""

    def __init__(self, server_ctx: ssl.SSLContext, upstream: tuple[str, int]) -> None:
        import socket

        self.ctx = server_ctx
        self.upstream = upstream
        self.handshakes = 0
        self.refused = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> TLSFront:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: Any) -> None:
        import socket

        conn.settimeout(5)
        tls = self.ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
        except (ssl.SSLError, OSError):
            self.refused += 1
            _linger_close(tls)  # as nginx does: read what the client sent, so no reset destroys the alert
            return
        self.handshakes += 1
        try:
            up = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            tls.close()
            return
        import select

        try:
            while not self._stop.is_set():
                ready = [tls] if tls.pending() else select.select([tls, up], [], [], 0.2)[0]
                for src in ready:
                    dst = up if src is tls else tls
                    data = src.recv(65536)
                    if not data:
                        return
                    dst.sendall(data)
        except OSError:
            return
        finally:
            for sock in (tls, up):
                with contextlib.suppress(OSError):
                    sock.close()

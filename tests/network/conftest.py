from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trustme

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer

from ._servers import Proxy, TLSFront

TRANSPORTS = ("sync", "async-httpx", "async-aiohttp")
HOST = "api.test"  # never resolved by the client: only the test proxy knows it
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
              "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


def server_context(ca: trustme.CA, *, require_client_cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(HOST, "127.0.0.1", "localhost").configure_cert(ctx)
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ca.configure_trust(ctx)
    return ctx


@pytest.fixture
def tls(ca: trustme.CA, server: FakeServer) -> Iterator[TLSFront]:
    with TLSFront(server_context(ca), ("127.0.0.1", server.port)) as front:
        yield front


def one_call(kind: str, **options: Any) -> Any:
    """One chat completion with a fresh client of ``kind`` (closed afterwards); returns the completion."""
    messages = [{"role": "user", "content": "hello proxy"}]
    options.setdefault("max_retries", 0)
    if kind == "sync":
        with Client(**options) as client:
            return client.chat.completions.create(model="m", messages=messages)

    async def run() -> Any:
        backend = "httpx" if kind == "async-httpx" else "aiohttp"
        async with AsyncClient(http_backend=backend, **options) as client:
            return await client.chat.completions.create(model="m", messages=messages)

    return asyncio.run(run())


def run_call(kind: str, fn: Callable[[Any], Any], **options: Any) -> Any:
    """``fn(client)`` on a fresh client of ``kind`` (awaited when async)."""
    if kind == "sync":
        with Client(**options) as client:
            return fn(client)

    async def run() -> Any:
        backend = "httpx" if kind == "async-httpx" else "aiohttp"
        async with AsyncClient(http_backend=backend, **options) as client:
            return await fn(client)

    return asyncio.run(run())


__all__ = ["HOST", "TRANSPORTS", "Proxy", "TLSFront", "one_call", "run_call", "server_context"]

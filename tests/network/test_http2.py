"""``http2=True``: HTTP/2 negotiated by ALPN against a real TLS server on 127.0.0.1 (hypercorn, a trustme CA),
one connection for many concurrent requests, streams, retries and error mapping as on HTTP/1.1, proxies and
custom CAs; and the typed errors raised at construction, before any request."""

from __future__ import annotations

import asyncio
import importlib.util
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from holysheep import AsyncClient, BadRequestError, Client, InvalidRequestError, RateLimitError

from ._h2server import H2Server
from .conftest import HOST, Proxy

pytestmark = pytest.mark.integration
MESSAGES = [{"role": "user", "content": "hi"}]
KINDS = ("sync", "async")


def _needs_server() -> None:
    pytest.importorskip("h2", reason="the dev extra installs h2")
    pytest.importorskip("hypercorn", reason="the dev extra installs hypercorn")


@pytest.fixture
def h2(ca: trustme.CA, tmp_path: Path) -> Iterator[H2Server]:
    _needs_server()
    with H2Server(ca, str(tmp_path / "server.pem")) as server:
        yield server


@pytest.fixture
def h1(ca: trustme.CA, tmp_path: Path) -> Iterator[H2Server]:
    """The same server, offering only HTTP/1.1 by ALPN."""
    _needs_server()
    with H2Server(ca, str(tmp_path / "server1.pem"), http2=False) as server:
        yield server


def options(server: H2Server, ca_file: str, **more: Any) -> dict[str, Any]:
    return {"base_url": server.base_url, "api_key": "sk-test", "verify": ca_file, "http2": True,
            "initial_retry_delay": 0.0, **more}


def call(kind: str, fn: Any, **opts: Any) -> Any:
    if kind == "sync":
        with Client(**opts) as client:
            return fn(client)

    async def run() -> Any:
        async with AsyncClient(**opts) as client:
            return await fn(client)

    return asyncio.run(run())


def create(client: Any) -> Any:
    return client.chat.completions.create(model="m", messages=MESSAGES)


@pytest.mark.parametrize("kind", KINDS)
def test_http2_is_negotiated_by_alpn(kind: str, h2: H2Server, ca_file: str) -> None:
    reply = call(kind, create, **options(h2, ca_file))
    assert reply.choices[0].message.content == "via HTTP/2"
    assert [s.http_version for s in h2.seen] == ["2"]
    reply = call(kind, create, **options(h2, ca_file, http2=False))  # the default stays HTTP/1.1
    assert reply.choices[0].message.content == "via HTTP/1.1"
    assert [s.http_version for s in h2.seen] == ["2", "1.1"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_without_h2_is_spoken_to_in_http11(kind: str, h1: H2Server, ca_file: str) -> None:
    reply = call(kind, create, **options(h1, ca_file))
    assert reply.choices[0].message.content == "via HTTP/1.1"


def test_concurrent_requests_share_one_connection(h2: H2Server, ca_file: str) -> None:
    h2.gate = 50  # the server holds every request until all 50 are in flight at once

    async def fifty(client: AsyncClient) -> list[Any]:
        return await asyncio.gather(*(create(client) for _ in range(50)))

    replies = call("async", fifty, **options(h2, ca_file))
    assert [r.choices[0].message.content for r in replies] == ["via HTTP/2"] * 50
    assert h2.peak_in_flight == 50
    assert h2.connections == 1
    assert h2.protocols == {"2"}


def test_over_a_hundred_in_flight_open_one_connection_per_hundred(h2: H2Server, ca_file: str) -> None:
    h2.gate = 250

    async def many(client: AsyncClient) -> list[Any]:
        return await asyncio.gather(*(create(client) for _ in range(250)))

    replies = call("async", many, **options(h2, ca_file))
    assert len(replies) == 250
    assert h2.peak_in_flight == 250
    assert h2.connections == 3  # shards of 100 streams, one HTTP/2 connection each


def test_http11_control_needs_a_connection_per_request(h1: H2Server, ca_file: str) -> None:
    h1.gate = 20

    async def twenty(client: AsyncClient) -> list[Any]:
        return await asyncio.gather(*(create(client) for _ in range(20)))

    call("async", twenty, **options(h1, ca_file, http_backend="httpx", http2=False))
    assert h1.peak_in_flight == 20
    assert h1.connections == 20


@pytest.mark.parametrize("kind", KINDS)
def test_streaming_over_http2(kind: str, h2: H2Server, ca_file: str) -> None:
    if kind == "sync":
        def run(client: Any) -> str:
            with client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
                return "".join(c.choices[0].delta.content or "" for c in stream)
    else:
        async def run(client: Any) -> str:  # type: ignore[misc]
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async with stream:
                return "".join([c.choices[0].delta.content or "" async for c in stream])
    assert call(kind, run, **options(h2, ca_file)) == "one two"
    assert [(s.http_version, s.body["stream"]) for s in h2.seen] == [("2", True)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("http2", [True, False])
def test_retries_and_error_mapping_as_on_http11(kind: str, http2: bool, h2: H2Server, ca_file: str) -> None:
    version = "2" if http2 else "1.1"
    h2.statuses = [503, 500]
    reply = call(kind, create, **options(h2, ca_file, http2=http2, max_retries=2))
    assert reply.choices[0].message.content == f"via HTTP/{version}"
    assert [s.http_version for s in h2.seen] == [version] * 3  # two retries, then the answer
    for status, error in ((429, RateLimitError), (400, BadRequestError)):
        h2.seen.clear()
        h2.statuses = [status]
        with pytest.raises(error) as info:
            call(kind, create, **options(h2, ca_file, http2=http2, max_retries=0))
        assert info.value.status_code == status
        assert [s.http_version for s in h2.seen] == [version]


@pytest.mark.parametrize("kind", KINDS)
def test_through_a_proxy_tunnel(kind: str, h2: H2Server, ca_file: str) -> None:
    with Proxy({HOST: ("127.0.0.1", h2.port)}) as proxy:
        reply = call(kind, create, **options(h2, ca_file, base_url=f"https://{HOST}:{h2.port}/v1", proxy=proxy.url))
    assert reply.choices[0].message.content == "via HTTP/2"
    assert [(s.method, s.target) for s in proxy.seen] == [("CONNECT", f"{HOST}:{h2.port}")]


@pytest.mark.parametrize("kind", KINDS)
def test_with_an_ssl_context_of_a_private_ca(kind: str, h2: H2Server, ca: trustme.CA) -> None:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    reply = call(kind, create, **options(h2, "", verify=ctx))
    assert reply.choices[0].message.content == "via HTTP/2"


def test_with_options_from_config_and_the_sync_batch_keep_http2(h2: H2Server, ca_file: str) -> None:
    async def copies(client: AsyncClient) -> list[str]:
        copy = client.with_options(max_retries=1)
        assert copy.config.network.http2 is True
        clone = AsyncClient.from_config(client.config)
        async with clone:
            replies = [await create(copy), await create(clone)]
        return [r.choices[0].message.content for r in replies]

    assert call("async", copies, **options(h2, ca_file)) == ["via HTTP/2"] * 2
    with Client(**options(h2, ca_file)) as client:
        assert client.with_options(timeout=5).config.network.http2 is True
        results = client.chat.completions.batch(["a", "b"], model="m")
    assert [r.ok for r in results] == [True, True]
    assert h2.protocols == {"2"}


def test_aiohttp_with_http2_is_refused_before_io() -> None:
    with pytest.raises(InvalidRequestError) as info:
        AsyncClient(api_key="sk-test", base_url="https://127.0.0.1:9/v1", http2=True, http_backend="aiohttp")
    assert info.value.field == "http2"
    assert 'http_backend="httpx"' in str(info.value) and "HTTP/1.1 only" in str(info.value)


def test_http2_without_a_backend_selects_httpx() -> None:
    pytest.importorskip("h2", reason="the dev extra installs h2")
    client = AsyncClient(api_key="sk-test", base_url="https://127.0.0.1:9/v1", http2=True)
    assert type(client._backend).__name__ == "AsyncHttpxBackend"
    assert type(AsyncClient(api_key="sk-test", base_url="https://127.0.0.1:9/v1")._backend).__name__ \
        == "AiohttpBackend"


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_missing_h2_is_a_typed_error_naming_the_extra(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "h2" else real(name, *a))
    with pytest.raises(InvalidRequestError) as info:
        cls(api_key="sk-test", base_url="https://127.0.0.1:9/v1", http2=True)
    assert info.value.field == "http2"
    assert 'pip install "holysheep[http2]"' in str(info.value)
    cls(api_key="sk-test", base_url="https://127.0.0.1:9/v1")  # without http2 nothing is needed


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_http2_with_your_own_http_client_and_bad_values_are_refused(cls: type) -> None:
    import httpx

    mine = httpx.Client() if cls is Client else httpx.AsyncClient()
    with pytest.raises(InvalidRequestError, match="does not apply to an http_client") as info:
        cls(api_key="sk-test", base_url="https://127.0.0.1:9/v1", http2=True, http_client=mine)
    assert info.value.field == "http2"
    with pytest.raises(InvalidRequestError, match="http2 must be True or False"):
        cls(api_key="sk-test", base_url="https://127.0.0.1:9/v1", http2="yes")


def test_plain_http_base_url_warns() -> None:
    pytest.importorskip("h2", reason="the dev extra installs h2")
    with pytest.warns(UserWarning, match="ALPN") as record:
        Client(api_key="sk-test", base_url="http://127.0.0.1:9/v1", http2=True)
    assert record[0].filename == __file__  # points at the line that built the client

"""The optional aiohttp backend behaves like the httpx one: same results, same typed errors."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    InternalServerError,
    InvalidRequestError,
    StreamIdleTimeoutError,
    StreamInterruptedError,
)
from holysheep.testing import FakeServer, Fault

pytest.importorskip("aiohttp")

MSG = [{"role": "user", "content": "alpha beta gamma"}]


def _client(server: FakeServer, **kw: object) -> AsyncClient:
    return AsyncClient(api_key=server.api_key, base_url=server.url, http_backend="aiohttp",
                       initial_retry_delay=0, **kw)  # type: ignore[arg-type]


def test_json_retries_and_errors() -> None:
    async def main(server: FakeServer) -> None:
        async with _client(server) as client:
            resp = await client.chat.completions.create(model="m", messages=MSG)
            assert resp.choices[0].message.content == "alpha beta gamma"
            assert resp.request_id and resp.request_id.startswith("req_")
            server.set_faults([Fault.status(503), Fault.reset()])
            resp = await client.chat.completions.create(model="m", messages=MSG)
            assert resp.retries_taken == 2
            server.set_faults([Fault.status(500)] * 3)
            with pytest.raises(InternalServerError):
                await client.chat.completions.create(model="m", messages=MSG)
            models = await client.models.list()
            assert models and models[0].id
        async with AsyncClient(api_key="hs_wrongwrongwrongwrong", base_url=server.url,
                               http_backend="aiohttp") as bad:
            with pytest.raises(AuthenticationError):
                await bad.chat.completions.create(model="m", messages=MSG)

    with FakeServer() as server:
        asyncio.run(main(server))
        assert server.wait_idle(5)


def test_stream_cut_and_stall() -> None:
    async def main(server: FakeServer) -> None:
        async with _client(server, stream_idle_timeout=0.3) as client:
            async with await client.chat.completions.create(model="m", messages=MSG, stream=True) as s:
                final = await s.get_final_completion()
            assert final.choices[0].message.content == "alpha beta gamma"
            server.set_faults([Fault.stream_cut(after_events=2)])
            with pytest.raises(StreamInterruptedError) as info:
                async with await client.chat.completions.create(model="m", messages=MSG, stream=True) as s:
                    async for _ in s:
                        pass
            assert "alpha" in info.value.partial_text

    with FakeServer() as server:
        asyncio.run(main(server))


def test_idle_timeout_mid_stream() -> None:
    async def main(server: FakeServer) -> None:
        async with _client(server, stream_idle_timeout=0.2, max_retries=0) as client:
            stream = await client.chat.completions.create(model="m", messages=MSG, stream=True)
            with pytest.raises((StreamIdleTimeoutError, APIConnectionError)):
                async with stream:
                    async for _ in stream:
                        pass

    with FakeServer(stream_chunk_delay=1.0) as server:
        asyncio.run(main(server))


def test_connection_refused_is_typed() -> None:
    async def main() -> None:
        async with AsyncClient(base_url="http://127.0.0.1:9/v1", http_backend="aiohttp", max_retries=1,
                               initial_retry_delay=0) as client:
            with pytest.raises(APIConnectionError):
                await client.models.list()

    asyncio.run(main())


def test_backend_argument_errors() -> None:
    with pytest.raises(InvalidRequestError, match="http_backend"):
        AsyncClient(base_url="http://127.0.0.1:9/v1", http_backend="curl")  # type: ignore[arg-type]


def test_auto_headers_are_the_sdks_own_or_none() -> None:
    """aiohttp adds no User-Agent or Content-Type of its own, also when the caller removed the SDK's."""
    async def main(server: FakeServer) -> None:
        async with _client(server) as client:
            await client.chat.completions.create(model="m", messages=MSG)
        async with _client(server, default_headers={"User-Agent": None}) as client:
            await client.chat.completions.create(model="m", messages=MSG,
                                                 extra_headers={"Content-Type": None})
            await client.models.list()

    with FakeServer() as server:
        asyncio.run(main(server))
        first, bare, listing = server.requests[-3:]
    assert first.headers["user-agent"].startswith("holysheep-python/")
    assert first.headers["content-type"] == "application/json"
    assert "user-agent" not in bare.headers and "content-type" not in bare.headers
    assert (listing.method, "user-agent" in listing.headers, "content-type" in listing.headers) == ("GET", False,
                                                                                                   False)


_NEVER_CLOSED = """
import asyncio
from holysheep import AsyncClient
from holysheep.testing import FakeServer

server = FakeServer().start()
client = AsyncClient(api_key=server.api_key, base_url=server.url)  # module level, never closed (openai's README)

async def main() -> None:
    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    print(reply.choices[0].message.content)

asyncio.run(main())
server.stop()
"""


def test_a_client_never_closed_exits_quietly() -> None:
    """aiohttp's "Unclosed client session" / "Unclosed connector" are not printed at exit (openai prints nothing)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _NEVER_CLOSED], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi\n", "")

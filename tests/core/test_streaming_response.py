"""``with_streaming_response`` units: respx-mocked httpx (sync and async), the pure chunk/text/line helpers
checked against httpx's own, and the read budget on a fake clock."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

from holysheep import (
    AsyncClient,
    AsyncStream,
    ChatCompletion,
    Client,
    InvalidRequestError,
    ResponseConsumedError,
    ResponseTooLargeError,
    Stream,
)
from holysheep._clients.streamed_response import AsyncStreamedAPIResponse, StreamedAPIResponse
from holysheep._core.body_chunks import LineSplitter, Rechunker, charset
from holysheep._transports.deadlines import ReadBudget

from .._fakes import FakeClock

KEY = "hs_Zq7SecretTestKey0123456789WXYZ"
BASE = "https://api.test/v1"
MESSAGES = [{"role": "user", "content": "Hi"}]
COMPLETION = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
BODY = json.dumps(COMPLETION).encode()


class Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body sent in exactly these pieces, counting how many were pulled (respx hands it over unread)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.pulled = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for piece in self.pieces:
            self.pulled += 1
            yield piece

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            self.pulled += 1
            yield piece

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def mock(router: respx.Router, stream: Pieces, **headers: str) -> respx.Route:
    return router.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, headers={"content-type": "application/json", **headers}, stream=stream))


def open_sync(client: Client, **kw: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES, **kw)


@respx.mock
def test_sync_nothing_is_pulled_before_asked_and_close_stops_it() -> None:
    body = Pieces([BODY[:10], BODY[10:]])
    route = mock(respx.mock, body)
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client) as response:
        assert isinstance(response, StreamedAPIResponse)
        assert body.pulled == 0 and route.call_count == 1
        assert response.status_code == 200 and not response.is_closed
    assert body.pulled == 0 and body.closed and response.is_closed
    with pytest.raises(ResponseConsumedError):
        response.read()


@respx.mock
def test_sync_read_parse_and_iterate_after_read() -> None:
    body = Pieces([BODY[:10], BODY[10:30], BODY[30:]])
    mock(respx.mock, body)
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client) as response:
        completion = response.parse()
        assert body.pulled == 3
        assert isinstance(completion, ChatCompletion) and completion.choices[0].message.content == "ok"
        assert response.read() == BODY and response.json() == COMPLETION and response.text() == BODY.decode()
        assert list(response.iter_bytes(chunk_size=100)) == [BODY[i:i + 100] for i in range(0, len(BODY), 100)]
        assert list(response.iter_lines()) == [BODY.decode()]


@respx.mock
def test_sync_iterating_does_not_keep_the_body() -> None:
    mock(respx.mock, Pieces([b"a", b"bc", b"def"]))
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client) as response:
        assert list(response.iter_bytes(chunk_size=2)) == [b"ab", b"cd", b"ef"]
        assert response.is_closed
        for again in (response.read, response.parse, lambda: list(response.iter_bytes())):
            with pytest.raises(ResponseConsumedError, match="read\\(\\) or parse\\(\\) before iterating"):
                again()


@respx.mock
def test_chunk_size_is_checked_when_called() -> None:
    mock(respx.mock, Pieces([BODY]))
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client) as response:
        for bad in (0, -1, 1.5, True):
            with pytest.raises(InvalidRequestError, match="chunk_size"):
                response.iter_bytes(chunk_size=bad)
        assert response.read() == BODY  # nothing was consumed by the refused calls


@respx.mock
def test_gzip_body_is_inflated_and_capped_after_decompression() -> None:
    packed = gzip.compress(BODY)
    mock(respx.mock, Pieces([packed[:20], packed[20:]]), **{"content-encoding": "gzip"})
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client) as response:
        assert response.read() == BODY
    with Client(api_key=KEY, base_url=BASE, max_response_bytes=len(BODY) - 1) as small, \
            open_sync(small) as response:
        with pytest.raises(ResponseTooLargeError) as info:
            response.read()
        assert info.value.limit == len(BODY) - 1


@respx.mock
def test_a_stream_true_response_gives_its_events_through_parse() -> None:
    events = b"".join(
        b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}).encode()
        + b"\n\n" for t in ("a", "b")) + b"data: [DONE]\n\n"
    respx.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(
        200, headers={"content-type": "text/event-stream"}, stream=Pieces([events])))
    with Client(api_key=KEY, base_url=BASE) as client, open_sync(client, stream=True) as response:
        stream = response.parse()
        assert isinstance(stream, Stream)
        assert "".join(c.choices[0].delta.content or "" for c in stream) == "ab"
        with pytest.raises(ResponseConsumedError, match="events were iterated"):  # not the first piece only
            response.read()
    assert response.is_closed


def test_async_httpx_lazy_and_parse() -> None:
    async def main() -> None:
        body = Pieces([BODY[:5], BODY[5:]])
        with respx.mock:
            mock(respx.mock, body)
            async with AsyncClient(api_key=KEY, base_url=BASE, http_backend="httpx") as client:
                manager = client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES)
                async with manager as response:
                    assert isinstance(response, AsyncStreamedAPIResponse)
                    assert body.pulled == 0
                    chunks = [c async for c in response.iter_bytes()]
                    assert chunks == [BODY[:5], BODY[5:]]
                    with pytest.raises(ResponseConsumedError):
                        await response.read()
                async with client.chat.completions.with_streaming_response.create(
                        model="m", messages=MESSAGES) as response:
                    assert (await response.parse()).choices[0].message.content == "ok"
                    assert [line async for line in response.iter_lines()] == [BODY.decode()]
                async with client.chat.completions.with_streaming_response.create(
                        model="m", messages=MESSAGES) as response:
                    pass
                assert response.is_closed

    asyncio.run(main())


def test_async_stream_true_parse_is_awaited() -> None:
    events = b'data: {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": ' \
             b'[{"index": 0, "delta": {"content": "z"}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'

    async def main() -> None:
        with respx.mock:
            respx.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=Pieces([events])))
            async with AsyncClient(api_key=KEY, base_url=BASE, http_backend="httpx") as client, \
                    client.chat.completions.with_streaming_response.create(
                        model="m", messages=MESSAGES, stream=True) as response:
                stream = await response.parse()
                assert isinstance(stream, AsyncStream)
                assert [c.choices[0].delta.content async for c in stream] == ["z"]
                with pytest.raises(ResponseConsumedError, match="events were iterated"):
                    await response.text()

    asyncio.run(main())


# --- the pure helpers, against httpx's own iter_bytes / iter_lines on the same pieces ---------------------------

def _httpx_lines(pieces: list[bytes], chunk_size: int | None) -> tuple[list[bytes], list[str]]:
    chunks = list(httpx.Response(200, stream=Pieces(pieces)).iter_bytes(chunk_size))
    lines = list(httpx.Response(200, stream=Pieces(pieces), headers={"content-type": "text/plain"}).iter_lines())
    return chunks, lines


def test_rechunker_and_line_splitter_match_httpx_on_random_splits() -> None:
    rng = random.Random(7)
    alphabet = ["a", "é", "✓", "\n", "\r", "\r\n", " ", "\u2028", "\x0c"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        data = text.encode()
        cuts = sorted(rng.sample(range(len(data) + 1), k=min(len(data) + 1, rng.randint(0, 6))))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True) if b > a]
        size = rng.choice([None, 1, 3, 16])
        chunker = Rechunker(size)
        ours = [c for p in pieces for c in chunker.feed(p)] + chunker.flush()
        splitter = LineSplitter()
        decoded = data.decode()  # whole characters: line splitting works on text
        text_pieces = [decoded[:len(decoded) // 2], decoded[len(decoded) // 2:]]
        lines = [line for t in text_pieces for line in splitter.feed(t)] + splitter.flush()
        want_chunks, want_lines = _httpx_lines(pieces, size)
        assert ours == want_chunks, (pieces, size)
        assert lines == want_lines, text


def test_charset_from_content_type() -> None:
    assert charset({"content-type": "text/plain; charset=ISO-8859-1"}) == "iso8859-1"
    assert charset({"content-type": 'application/json; charset="utf-8"'}) == "utf-8"
    assert charset({"content-type": "text/plain; charset=no-such-codec"}) == "utf-8"
    assert charset({}) == "utf-8"


# --- the read budget: only the server's time counts -------------------------------------------------------------

def test_read_budget_charges_reads_only() -> None:
    clock = FakeClock(100.0)
    budget = ReadBudget(3.0, spent=1.0, clock=clock)  # 1 s to the headers: 2 s left for the body
    assert budget.begin() == 2.0
    clock.now += 0.5  # a read of 0.5 s
    budget.end()
    assert budget.left == 1.5
    clock.now += 3600  # the caller's own time between reads
    assert budget.begin() == 1.5
    clock.now += 1.5
    budget.end()  # exactly used up: not past it
    assert budget.left == 0.0
    with pytest.raises(httpx.ReadTimeout, match="its 3 s deadline"):
        budget.begin()


def test_read_budget_past_the_deadline_and_none() -> None:
    clock = FakeClock(100.0)
    budget = ReadBudget(1.0, spent=0.25, clock=clock)
    budget.begin()
    clock.now += 0.8
    with pytest.raises(httpx.ReadTimeout, match="its 1 s deadline"):
        budget.end()
    budget = ReadBudget(1.0, spent=0.0, clock=clock)
    budget.begin()
    clock.now += 0.998  # a socket timeout set to what was left, firing 2 ms early: still the deadline
    assert isinstance(budget.timed_out(), httpx.ReadTimeout)
    budget = ReadBudget(1.0, spent=0.0, clock=clock)
    budget.begin()
    clock.now += 0.3  # httpx's own per-read timeout, with time left: not the deadline
    assert budget.timed_out() is None
    unbounded = ReadBudget(None, spent=5.0, clock=clock)
    assert unbounded.begin() is None
    clock.now += 1e6
    unbounded.end()
    assert unbounded.timed_out() is None

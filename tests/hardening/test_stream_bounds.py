"""Every stream is bounded by default: against an endless stream of valid events on 127.0.0.1, the kept text
stops at ``max_stream_text_bytes`` with `StreamTooLargeError` (its ``partial_text`` the exact prefix up to the
cap), on every path that streams: ``create(stream=True)``, the ``stream(...)`` helper, ``with_streaming_response``
(``iter_lines``, ``iter_bytes``, ``parse``) and ``with_raw_response`` with ``stream=True``, on every transport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from holysheep import ResponseTooLargeError, StreamInterruptedError, StreamTooLargeError
from holysheep._core.call import Call
from holysheep._core.request import NO_OPTIONS, RequestSpec
from holysheep._core.retry import is_retryable

from .conftest import KEY, MESSAGES, chat, make_client
from .hostile import HostileServer, Req, head, write_forever
from .test_streaming_response import aw, opened, pieces, run

PIECE = "abcdefg"  # 7 bytes: a 1000-byte cap falls inside the 143rd chunk
CAP = 1000
EVENT = b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                "choices": [{"index": 0, "delta": {"content": PIECE}}]}).encode() + b"\n\n"
WHOLE = CAP // len(PIECE)  # 142 chunks fit; the 143rd passes the cap
PREFIX = (PIECE * (WHOLE + 1))[:CAP]


async def endless(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(head(content_type="text/event-stream"))
    await write_forever(w, EVENT * 16, limit=4 << 20)  # hang guard: 4 MiB, far past the cap


def check(error: StreamTooLargeError, srv: HostileServer) -> None:
    assert isinstance(error, StreamInterruptedError) and isinstance(error, ResponseTooLargeError)
    assert error.limit == CAP and error.partial_text == PREFIX
    assert "max_stream_text_bytes" in str(error) and f"after {WHOLE + 1} chunks" in str(error)
    assert srv.closed_by_client.wait(5), "the SDK did not close the connection"
    assert len(srv.requests) == 1  # never retried


def test_create_stream_stops_at_the_cap_with_the_exact_prefix(kind: str) -> None:
    seen: list[Any] = []

    async def body(client: Any, is_async: bool) -> None:
        stream = await aw(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        async with opened(stream, is_async):
            async for chunk in pieces(stream):
                seen.append(chunk)

    with HostileServer(endless) as srv:
        with pytest.raises(StreamTooLargeError) as info:
            run(kind, srv.url, body, max_stream_text_bytes=CAP)
        check(info.value, srv)
    assert len(seen) == WHOLE  # the chunk that passed the cap is not handed out


def test_the_stream_helper_stops_at_the_cap(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        async with opened(client.chat.completions.stream(model="m", messages=MESSAGES), is_async) as stream:
            async for _ in pieces(stream):
                pass

    with HostileServer(endless) as srv:
        with pytest.raises(StreamTooLargeError) as info:
            run(kind, srv.url, body, max_stream_text_bytes=CAP)
        check(info.value, srv)


@pytest.mark.parametrize("how", ["iter_lines", "iter_bytes", "parse"])
def test_with_streaming_response_stops_at_the_cap(kind: str, how: str) -> None:
    got: list[Any] = []

    async def body(client: Any, is_async: bool) -> None:
        manager = client.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES, stream=True)
        async with opened(manager, is_async) as response:
            source = await aw(response.parse()) if how == "parse" else getattr(response, how)()
            async for item in pieces(source):
                got.append(item)

    with HostileServer(endless) as srv:
        with pytest.raises(StreamTooLargeError) as info:
            run(kind, srv.url, body, max_stream_text_bytes=CAP)
        check(info.value, srv)
    if how != "parse":  # the server's bytes as sent, stopped by the cap: no more than was read when it passed
        sent = "".join(line + "\n" for line in got) if how == "iter_lines" else b"".join(got).decode()
        assert sent == (EVENT.decode() * (len(sent) // len(EVENT) + 1))[:len(sent)]
        assert CAP < len(sent) < 256 << 10
    if how == "parse":
        assert len(got) == WHOLE


def test_with_raw_response_stream_stops_at_the_cap(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, stream=True))
        stream = await aw(raw.parse())
        async with opened(stream, is_async):
            async for _ in pieces(stream):
                pass

    with HostileServer(endless) as srv:
        with pytest.raises(StreamTooLargeError) as info:
            run(kind, srv.url, body, max_stream_text_bytes=CAP)
        check(info.value, srv)


def test_multibyte_text_is_cut_on_a_character_boundary() -> None:
    event = EVENT.replace(PIECE.encode(), "\u00e9t\u00e9".encode())  # 5 bytes, 3 characters

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        await write_forever(w, event * 16, limit=1 << 20)

    with HostileServer(scenario) as srv, pytest.raises(StreamTooLargeError) as info:
        chat("sync", srv.url, stream=True, client_kw={"max_stream_text_bytes": 12})
    assert info.value.partial_text == "\u00e9t\u00e9\u00e9t\u00e9\u00e9"  # 10 bytes, then "é" (2 of 2 left)


def test_the_bounds_are_on_by_default_and_never_retried() -> None:
    client = make_client("sync", "http://127.0.0.1:9/v1")
    config = client.config
    assert config.max_stream_text_bytes == 64 << 20 and config.stream_idle_timeout == 300.0
    spec = RequestSpec("POST", "/chat/completions", {"model": "m", "messages": MESSAGES, "stream": True},
                       parse=bytes, stream=True, options=NO_OPTIONS)
    call = Call(config, spec)
    assert call.idle_timeout == 300.0 and call.timeout.read == 300.0
    assert not is_retryable(StreamTooLargeError("x", limit=1))
    client.close()


def test_fallbacks_keep_the_clients_bounds() -> None:
    from holysheep import Client, Fallback

    with Client(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_stream_text_bytes=5000,
                max_response_bytes=7000, max_sse_event_bytes=6000,
                fallbacks=[Fallback(base_url="http://127.0.0.1:8/v1")]) as client:
        router: Any = client._router
        fb = router.fallbacks[0].config
        assert (fb.max_stream_text_bytes, fb.max_response_bytes, fb.max_sse_event_bytes) == (5000, 7000, 6000)


def test_inter_token_gaps_are_kept_in_bounded_memory() -> None:
    from array import array

    from holysheep._core.stream_bounds import MAX_GAPS, sample_gap

    sample, stride = array("d"), 1
    for i in range(3 * MAX_GAPS):
        sample, stride = sample_gap(sample, stride, i, float(i))
    assert list(sample) == [float(i) for i in range(0, 3 * MAX_GAPS, 4)]  # every 4th gap, evenly spaced
    assert stride == 4 and len(sample) <= MAX_GAPS


def test_metrics_of_a_long_stream_are_exact_in_bounded_memory() -> None:
    from holysheep._core.stream_bounds import MAX_GAPS
    from holysheep._core.stream_state import StreamState

    ticks = iter(range(10**7))
    state = StreamState(0.0, clock=lambda: float(next(ticks)))
    state.feed(EVENT * (MAX_GAPS + 11))  # one clock reading per output chunk (and one for the first chunk)
    metrics = state.metrics()
    assert metrics.itl_mean_s == 1.0 and metrics.itl_p50_s == 1.0 and metrics.itl_p95_s == 1.0
    assert metrics.completion_tokens == MAX_GAPS + 11 and len(state._gaps) <= MAX_GAPS
    assert state.partial_text == PIECE * (MAX_GAPS + 11) and len(state._texts[0]) < (MAX_GAPS + 11) // 200


def test_kept_text_is_joined_in_runs() -> None:
    from holysheep._core.stream_bounds import RUN, Pieces

    pieces = Pieces()
    for i in range(2 * RUN + 3):
        pieces.append(str(i % 10))
        if len(pieces) >= pieces.due:
            pieces.compact()
    assert len(pieces) == 2 + 3 and "".join(pieces) == "".join(str(i % 10) for i in range(2 * RUN + 3))


def test_the_error_and_the_state_hold_no_cycle() -> None:
    """A stream dropped after its cap frees its text by reference counting: the state keeps no error (whose
    traceback would hold the state), and the error keeps the text, not the state."""
    import gc

    from holysheep._core.stream_state import StreamState

    state = StreamState(0.0, max_text_bytes=CAP)
    assert len(state.feed(EVENT * (WHOLE + 5))) == WHOLE  # the chunks before the cap are handed out
    with pytest.raises(StreamTooLargeError) as info:
        state.feed(b"")
    assert info.value.partial_text == PREFIX and state.overflow == WHOLE + 1
    assert not [r for r in gc.get_referents(state) if isinstance(r, BaseException)]
    assert state not in gc.get_referents(info.value) and state.raw_error is None

"""SSE streaming: the exact OpenAI chunk format, framing, include_usage, pacing."""

from __future__ import annotations

import json
import re
import time

import httpx

from holysheep.testing import FakeServer

from .conftest import RecordedSleep, chat_body, client_for
from .rawhttp import connect, read_response, request_bytes

EVENT = re.compile(rb"data: (.+?)\n\n", re.S)


def events_of(body: bytes) -> list[bytes]:
    assert EVENT.sub(b"", body) == b"", "the body must be only data events"
    return EVENT.findall(body)


def test_stream_bytes_and_chunk_format() -> None:
    with (
        FakeServer(reply="Hello big  world") as server,
        connect(server.port) as sock,
        sock.makefile("rb") as f,
    ):
        sock.sendall(request_bytes("POST", "/v1/chat/completions", server.api_key, chat_body(stream=True)))
        status, headers, body, complete = read_response(f)
    assert (status, complete) == (200, True)
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    assert headers["transfer-encoding"] == "chunked"
    assert headers["x-request-id"].startswith("req_")
    events = events_of(body)
    assert events[-1] == b"[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) == 1 + 3 + 1  # role, one per word, finish
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and re.fullmatch(r"chatcmpl-[0-9a-f]{32}", ids.pop())
    for c in chunks:
        assert c["object"] == "chat.completion.chunk"
        assert c["model"] == "deepseek-v3.2"
        assert "usage" not in c
        assert set(c) == {"id", "object", "created", "model", "system_fingerprint", "choices"}
    assert chunks[0]["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": "", "refusal": None}, "logprobs": None,
         "finish_reason": None}
    ]  # fmt: skip
    assert [c["choices"][0]["delta"]["content"] for c in chunks[1:4]] == ["Hello ", "big  ", "world"]
    assert chunks[4]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]
    # each event is framed as its own chunk: b"<hex len>\r\n data: ...\n\n \r\n"
    assert body.startswith(b"data: {")


def test_stream_include_usage() -> None:
    with FakeServer(reply="a b c d") as server, client_for(server) as c:
        body = chat_body("12345678", stream=True, stream_options={"include_usage": True})
        r = c.post("/chat/completions", json=body)
    events = events_of(r.content)
    chunks = [json.loads(e) for e in events[:-1]]
    assert events[-1] == b"[DONE]"
    assert all(ch["usage"] is None for ch in chunks[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}
    assert "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks[:-1]) == "a b c d"


def test_words_per_chunk_and_max_tokens() -> None:
    with FakeServer(reply="1 2 3 4 5 6 7", words_per_chunk=3) as server, client_for(server) as c:
        chunks = [
            json.loads(e)
            for e in events_of(c.post("/chat/completions", json=chat_body(stream=True)).content)[:-1]
        ]
        assert [ch["choices"][0]["delta"]["content"] for ch in chunks[1:-1]] == ["1 2 3 ", "4 5 6 ", "7"]
        r = c.post("/chat/completions", json=chat_body(stream=True, max_tokens=4))
        chunks = [json.loads(e) for e in events_of(r.content)[:-1]]
        assert "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks) == "1 2 3 4"
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_empty_reply_streams_role_and_finish_only() -> None:
    with FakeServer(reply="") as server, client_for(server) as c:
        events = events_of(c.post("/chat/completions", json=chat_body(stream=True)).content)
    assert len(events) == 3 and events[-1] == b"[DONE]"


def test_latency_and_chunk_delay_pace_the_stream() -> None:
    """TTFT (first content) = latency; each later content event comes stream_chunk_delay after the last.

    The schedule is checked exactly through the server's injected sleep: the delays it waited, in order,
    and how many of them had passed when each word arrived (a loaded machine only makes them later)."""
    sleep = RecordedSleep()
    server = FakeServer(reply="w1 w2 w3 w4 w5", latency=0.1, stream_chunk_delay=0.05, sleep=sleep)
    with server, client_for(server) as c:
        c.get("/models")  # open the connection first
        assert sleep.delays == [0.1]
        t0 = time.perf_counter()
        stamps: list[tuple[float, int, str]] = []
        with c.stream("POST", "/chat/completions", json=chat_body(stream=True)) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    delta = json.loads(line[6:])["choices"][0]["delta"]
                    if delta.get("content"):
                        stamps.append((time.perf_counter() - t0, len(sleep.delays) - 1, delta["content"]))
    assert [w for _, _, w in stamps] == ["w1 ", "w2 ", "w3 ", "w4 ", "w5"]
    assert sleep.delays[1:] == [0.1, 0.05, 0.05, 0.05, 0.05]  # the latency, then one delay before each later word
    assert all(waited >= k + 1 for k, (_, waited, _) in enumerate(stamps))  # word k came after k + 1 of them
    assert all(at >= 0.1 + 0.05 * k for k, (at, _, _) in enumerate(stamps))  # and so never early in real time


def test_non_stream_flag_values_give_json(server: FakeServer) -> None:
    with client_for(server) as c:
        r = c.post("/chat/completions", json=chat_body(stream=False))
    assert r.headers["content-type"] == "application/json"
    assert isinstance(r.json()["choices"][0]["message"]["content"], str)


def test_stream_with_httpx_iter_lines(server: FakeServer) -> None:
    with (
        client_for(server) as c,
        c.stream("POST", "/chat/completions", json=chat_body("x y", stream=True)) as r,
    ):
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert len(lines) == 5
    assert isinstance(r, httpx.Response)

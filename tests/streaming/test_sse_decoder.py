"""The SSE decoder table: every case runs whole and split into 1-byte chunks."""

from __future__ import annotations

import pytest

from holysheep._core.sse import ServerSentEvent, SSEDecoder

E = ServerSentEvent

CASES: list[tuple[str, bytes, list[ServerSentEvent]]] = [
    ("lf", b"data: a\n\ndata: b\n\n", [E("a"), E("b")]),
    ("crlf", b"data: a\r\n\r\ndata: b\r\n\r\n", [E("a"), E("b")]),
    ("cr", b"data: a\r\rdata: b\r\r", [E("a"), E("b")]),
    ("mixed endings", b"data: a\r\n\rdata: b\n\r\n", [E("a"), E("b")]),
    ("multi-line data", b"data: line1\ndata: line2\ndata:\n\n", [E("line1\nline2\n")]),
    ("no space after colon", b"data:x\n\n", [E("x")]),
    ("only one space stripped", b"data:  two\n\n", [E(" two")]),
    ("comment ping", b": ping\n\ndata: a\n\n: keep-alive\n\n", [E("a")]),
    ("event id retry", b"event: delta\nid: 7\nretry: 3000\ndata: a\n\n", [E("a", "delta", "7", 3000)]),
    ("id persists", b"id: 1\ndata: a\n\ndata: b\n\n", [E("a", None, "1"), E("b", None, "1")]),
    ("bad retry ignored", b"retry: soon\ndata: a\n\n", [E("a")]),
    ("event without data", b"event: ping\n\ndata: a\n\n", [E("a")]),
    ("field without colon", b"data\n\n", [E("")]),
    ("unknown field ignored", b"foo: bar\ndata: a\n\n", [E("a")]),
    ("done", b"data: {\"x\":1}\n\ndata: [DONE]\n\n", [E('{"x":1}'), E("[DONE]")]),
    ("utf8 multibyte", "data: héllo 🐑 世界\n\n".encode(), [E("héllo 🐑 世界")]),
    ("escaped newline in json", b'data: {"c":"a\\n\\nb"}\n\n', [E('{"c":"a\\n\\nb"}')]),
    ("event type resets", b"event: error\ndata: a\n\ndata: b\n\n", [E("a", "error"), E("b")]),
    ("unterminated event discarded", b"data: a\n\ndata: tail", [E("a")]),
    ("unterminated event with newline discarded", b"data: a\n\ndata: tail\n", [E("a")]),
    ("id with nul ignored", b"id: a\x00b\ndata: x\n\n", [E("x")]),
]


def _decode(chunks: list[bytes]) -> list[ServerSentEvent]:
    dec = SSEDecoder()
    out: list[ServerSentEvent] = []
    for c in chunks:
        out.extend(dec.feed(c))
    out.extend(dec.flush())
    return out


@pytest.mark.parametrize(("name", "raw", "expected"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("split", ["whole", "bytewise"])
def test_decoder(name: str, raw: bytes, expected: list[ServerSentEvent], split: str) -> None:
    chunks = [raw] if split == "whole" else [raw[i:i + 1] for i in range(len(raw))]
    assert _decode(chunks) == expected


def test_multibyte_char_split_across_reads() -> None:
    raw = "data: 🐑\n\n".encode()
    cut = raw.index(b"\xf0") + 2  # in the middle of the 4-byte sheep
    assert _decode([raw[:cut], raw[cut:]]) == [E("🐑")]


def test_crlf_split_across_reads_counts_once() -> None:
    assert _decode([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == [E("a"), E("b")]


def test_decoder_is_linear_in_the_bytes_fed() -> None:
    """A 32 MiB line fed in 64 KiB chunks: each feed scans only its new bytes (the old decoder re-split the
    whole buffer every time: quadratic, minutes for this size)."""
    import time

    dec = SSEDecoder(max_line_bytes=64 << 20, max_event_bytes=64 << 20)
    piece = b"x" * 65536
    started = time.perf_counter()
    assert dec.feed(b"data: ") == []
    for _ in range(512):
        assert dec.feed(piece) == []
    events = dec.feed(b"\n\n")
    assert time.perf_counter() - started < 5.0
    assert len(events) == 1 and len(events[0].data) == 512 * 65536


def test_line_and_event_caps() -> None:
    from holysheep import ResponseTooLargeError

    dec = SSEDecoder(max_line_bytes=100, max_event_bytes=1000)
    with pytest.raises(ResponseTooLargeError) as info:
        for _ in range(20):
            dec.feed(b"data: 0123456789")
    assert info.value.limit == 100
    dec = SSEDecoder(max_line_bytes=100, max_event_bytes=250)
    with pytest.raises(ResponseTooLargeError, match="event is larger than 250"):
        dec.feed(b"data: " + b"a" * 90 + b"\n" + b"data: " + b"b" * 90 + b"\n" + b"data: " + b"c" * 90 + b"\n")
    dec = SSEDecoder(max_line_bytes=100, max_event_bytes=250)
    assert [e.data for e in dec.feed(b"data: " + b"a" * 90 + b"\n\n" + b"data: " + b"b" * 90 + b"\n\n")] == [
        "a" * 90, "b" * 90]
    assert dec.events == 2
    assert dec.feed(b": comment\n\n") == [] and dec.events == 2

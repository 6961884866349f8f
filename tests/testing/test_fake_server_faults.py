"""Fault injection: each fault kind does what it says, by sequence, by rate (seeded) and per path."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter

import httpx
import pytest

from holysheep.testing import DEFAULT_FAULT_MIX, FakeServer, Fault

from .conftest import chat_body, client_for
from .rawhttp import connect, read_response, request_bytes

CHAT = "/v1/chat/completions"


def test_sequence_is_consumed_per_request_then_requests_succeed() -> None:
    seq = [Fault.status(429, retry_after=0.01), Fault.status(500), None, Fault.status(503, retry_after=2)]
    with FakeServer(faults=seq) as server, client_for(server) as c:
        responses = [c.post("/chat/completions", json=chat_body()) for _ in range(6)]
    assert [r.status_code for r in responses] == [429, 500, 200, 503, 200, 200]
    assert responses[0].headers["retry-after"] == "0.01"
    assert responses[3].headers["retry-after"] == "2"
    assert "retry-after" not in responses[1].headers
    assert responses[0].json()["error"] == {
        "message": "Rate limit reached for requests.",
        "type": "rate_limit_exceeded",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert responses[1].json()["error"]["type"] == "server_error"
    assert all(r.headers["x-request-id"].startswith("req_") for r in responses)
    assert [r.fault for r in server.requests] == [*seq, None, None]
    assert [r.status for r in server.requests] == [429, 500, 200, 503, 200, 200]
    assert server.fault_plan.pending() == 0


def test_unauthorized_and_quota_exhausted_faults() -> None:
    with (
        FakeServer(faults=[Fault.unauthorized(), Fault.quota_exhausted()]) as server,
        client_for(server) as c,
    ):
        r401 = c.post("/chat/completions", json=chat_body())
        r429 = c.post("/chat/completions", json=chat_body())
    assert (r401.status_code, r401.json()["error"]["type"]) == (401, "invalid_api_key")
    assert (r429.status_code, r429.json()["error"]["type"], r429.json()["error"]["code"]) == (
        429, "insufficient_quota", "insufficient_quota")  # fmt: skip
    assert "retry-after" not in r429.headers


def test_reset_sends_rst_without_a_response() -> None:
    with FakeServer(faults=[Fault.reset()]) as server:
        with connect(server.port) as sock:
            sock.sendall(request_bytes("POST", CHAT, server.api_key, chat_body()))
            with pytest.raises(ConnectionResetError):
                sock.recv(1024)
        assert server.requests[0].status is None
        assert server.requests[0].fault == Fault.reset()
        with client_for(server) as c:  # the next connection works
            assert c.post("/chat/completions", json=chat_body()).status_code == 200
        assert server.wait_idle(2)


def test_reset_seen_by_httpx_as_a_transport_error() -> None:
    server = FakeServer(faults=[Fault.reset()])
    transport_errors = (httpx.ReadError, httpx.RemoteProtocolError)
    with server, client_for(server) as c, pytest.raises(transport_errors):
        c.post("/chat/completions", json=chat_body())


def test_stall_forever_times_out_the_client_and_ends_at_stop() -> None:
    server = FakeServer(faults=[Fault.stall()]).start()
    try:
        with client_for(server, timeout=0.3) as c, pytest.raises(httpx.ReadTimeout):
            c.post("/chat/completions", json=chat_body())
        assert server.wait_idle(2)  # the client hung up: the stalled request ends
        assert server.requests[0].status is None
        sock = connect(server.port)
        server.set_faults([Fault.stall()])
        sock.sendall(request_bytes("POST", CHAT, server.api_key, chat_body()))
        assert server.wait_in_flight(1, 30)
        assert server.in_flight == 1
        server.stop()  # ends the stalled request (checked below: nothing is left in flight)
        sock.settimeout(2)
        try:
            data = sock.recv(1024)
        except ConnectionResetError:
            data = b""
        assert data == b""  # closed without a response
        sock.close()
    finally:
        server.stop()
    assert server.in_flight == 0


def test_stall_for_seconds_then_answers() -> None:
    with FakeServer(faults=[Fault.stall(0.3)]) as server, client_for(server) as c:
        t0 = time.perf_counter()
        r = c.post("/chat/completions", json=chat_body("late"))
        elapsed = time.perf_counter() - t0
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "late"  # answered, no timeout
    assert elapsed >= 0.3


def test_malformed_json_is_200_with_a_broken_body() -> None:
    with (
        FakeServer(faults=[Fault.malformed_json(), Fault.malformed_json()]) as server,
        client_for(server) as c,
    ):
        r = c.post("/chat/completions", json=chat_body())
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.text.startswith('{"id":"chatcmpl-')
        with pytest.raises(json.JSONDecodeError):
            json.loads(r.text)
        r = c.post("/chat/completions", json=chat_body(stream=True))
        lines = [line for line in r.text.split("\n\n") if line]
        assert lines[-1] == "data: [DONE]"
        with pytest.raises(json.JSONDecodeError):
            json.loads(lines[0].removeprefix("data: "))
        assert c.get("/models").status_code == 200  # keep-alive survives


def test_stream_cut_closes_mid_stream_without_done() -> None:
    with FakeServer(reply="a b c d e f", faults=[Fault.stream_cut(after_events=3)]) as server:
        with connect(server.port) as sock, sock.makefile("rb") as f:
            sock.sendall(request_bytes("POST", CHAT, server.api_key, chat_body(stream=True)))
            status, _headers, body, complete = read_response(f)
            assert (status, complete) == (200, False)
            assert f.read() == b""
        events = [e for e in body.split(b"\n\n") if e]
        assert len(events) == 3
        assert b"[DONE]" not in body
        assert [json.loads(e[6:])["choices"][0]["delta"]["content"] for e in events[1:]] == ["a ", "b "]
        server.set_faults([Fault.stream_cut()])
        with client_for(server) as c, pytest.raises(httpx.RemoteProtocolError):
            c.post("/chat/completions", json=chat_body(stream=True))
        assert server.wait_idle(2)


def test_stream_cut_on_a_json_response_truncates_the_body() -> None:
    with FakeServer(faults=[Fault.stream_cut()]) as server, connect(server.port) as sock:
        sock.sendall(request_bytes("POST", CHAT, server.api_key, chat_body()))
        with sock.makefile("rb") as f:
            status, headers, body, complete = read_response(f)
        assert (status, complete) == (200, False)
        assert 0 < len(body) == (int(headers["content-length"])) // 2


def test_stream_error_event() -> None:
    fault = Fault.stream_error(
        "upstream overloaded", error_type="overloaded_error", code="overloaded", after_events=2
    )
    with FakeServer(reply="a b c", faults=[fault, fault]) as server, client_for(server) as c:
        r = c.post("/chat/completions", json=chat_body(stream=True))
        events = [e for e in r.text.split("\n\n") if e]
        assert r.status_code == 200 and len(events) == 3
        assert json.loads(events[-1].removeprefix("data: ")) == {
            "error": {"message": "upstream overloaded", "type": "overloaded_error", "param": None,
                      "code": "overloaded"}
        }  # fmt: skip
        assert "[DONE]" not in r.text
        r = c.post("/chat/completions", json=chat_body())  # a JSON request gets the error as a 500
        assert r.status_code == 500 and r.json()["error"]["type"] == "overloaded_error"


def test_fault_rate_is_seeded_and_reproducible() -> None:
    def run(seed: int) -> list[str]:
        mix = {Fault.status(500): 1.0, "503": 1.0, Fault.status(429, retry_after=0): 2.0}
        with FakeServer(fault_rate=0.3, fault_mix=mix, seed=seed) as server, client_for(server) as c:
            statuses = [c.post("/chat/completions", json=chat_body()).status_code for _ in range(300)]
            assert [r.status for r in server.requests] == statuses
            return [r.fault.name if r.fault else "-" for r in server.requests]

    first, again, other = run(7), run(7), run(8)
    assert first == again
    assert first != other
    counts = Counter(first)
    assert 0.2 < (300 - counts["-"]) / 300 < 0.4
    assert set(counts) == {"-", "500", "503", "429"}
    assert counts["429"] > counts["500"]


def test_default_fault_mix_kinds() -> None:
    with FakeServer(fault_rate=1.0, seed=1) as server, client_for(server) as c:
        for _ in range(60):
            with contextlib.suppress(httpx.TransportError):
                c.post("/chat/completions", json=chat_body())
        kinds = {r.fault for r in server.requests}
    assert kinds == set(DEFAULT_FAULT_MIX)


def test_faults_target_chat_completions_by_default_and_any_path_on_request() -> None:
    with FakeServer(faults=[Fault.status(500)]) as server, client_for(server) as c:
        assert c.get("/models").status_code == 200  # not a faulted path: the queue is untouched
        assert c.get("/quota").status_code == 200
        assert c.post("/chat/completions", json=chat_body()).status_code == 500
    with FakeServer(faults=[Fault.status(500)], fault_paths=None) as server, client_for(server) as c:
        assert c.get("/models").status_code == 500
        assert c.post("/chat/completions", json=chat_body()).status_code == 200


def test_per_path_fault_sequences() -> None:
    faults = {"/v1/models": [Fault.status(502), None, Fault.status(503)], "/quota": ["500"]}
    with FakeServer(faults=faults) as server, client_for(server) as c:
        assert [c.get("/models").status_code for _ in range(4)] == [502, 200, 503, 200]
        assert [c.get("/quota").status_code for _ in range(2)] == [500, 200]
        assert c.post("/chat/completions", json=chat_body()).status_code == 200


def test_fault_parse_and_validation() -> None:
    assert Fault.parse("429") == Fault.status(429, retry_after=0.05)
    assert Fault.parse("401") == Fault.unauthorized()
    assert Fault.parse("stream-cut") == Fault.stream_cut()
    assert Fault.parse("reset").name == "reset"
    assert Fault.status(503).name == "503"
    with pytest.raises(ValueError):
        Fault.parse("nonsense")
    with pytest.raises(ValueError):
        Fault.status(200)
    with pytest.raises(ValueError):
        FakeServer(fault_rate=1.5)
    with pytest.raises(ValueError):
        FakeServer(fault_rate=0.5, fault_mix=[])


def test_faults_under_concurrency_every_request_answered_once() -> None:
    """Many threads, 30% faults: every request is recorded once with the fault it got."""
    with FakeServer(fault_rate=0.3, seed=3, fault_mix=["500", "reset", "429"]) as server:
        results: list[str] = []
        lock = threading.Lock()

        def worker(n: int) -> None:
            with client_for(server) as c:
                for i in range(n):
                    try:
                        out = str(c.post("/chat/completions", json=chat_body(f"{i}")).status_code)
                    except httpx.TransportError:
                        out = "reset"
                    with lock:
                        results.append(out)

        threads = [threading.Thread(target=worker, args=(25,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        recorded = Counter("200" if r.fault is None else r.fault.name for r in server.requests)
        assert server.wait_idle(2)
    assert Counter(results) == recorded
    assert sum(recorded.values()) == 200
    assert isinstance(socket.SO_LINGER, int)

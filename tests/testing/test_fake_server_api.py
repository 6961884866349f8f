"""FakeServer endpoints, auth, error bodies, request log and custom handlers, driven with plain httpx."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from holysheep.testing import FakeServer, RecordedRequest, Response, ScriptedReply

from .conftest import RecordedSleep, chat_body, client_for

REQ_ID = re.compile(r"^req_[0-9a-f]{32}$")


def test_url_and_key_shape() -> None:
    with FakeServer() as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.url)
        assert server.port > 0
        assert re.fullmatch(r"hs_test_[A-Za-z0-9]{24}", server.api_key)
    assert FakeServer().api_key != FakeServer().api_key


def test_start_stop_methods_and_url_before_start() -> None:
    server = FakeServer()
    with pytest.raises(RuntimeError):
        _ = server.url
    assert server.start() is server
    try:
        with client_for(server) as c:
            assert c.get("/models").status_code == 200
        with pytest.raises(RuntimeError, match="already started"):
            server.start()
    finally:
        server.stop()
    server.stop()  # idempotent
    with pytest.raises(httpx.ConnectError), httpx.Client(timeout=2) as c:
        c.get(f"http://127.0.0.1:{server.port}/v1/models")


def test_fixed_port_in_use_raises() -> None:
    with FakeServer() as first, pytest.raises(RuntimeError, match="could not start"):
        FakeServer(port=first.port).start()


def test_chat_completion_echo(server: FakeServer) -> None:
    with client_for(server) as c:
        r = c.post("/chat/completions", json=chat_body("hello big world"))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert REQ_ID.match(r.headers["x-request-id"])
    data = r.json()
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{32}", data["id"])
    assert data["object"] == "chat.completion"
    assert abs(data["created"] - time.time()) < 5
    assert data["model"] == "deepseek-v3.2"
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "hello big world", "refusal": None}
    assert choice["finish_reason"] == "stop"
    # 15 characters -> ceil(15 / 4) = 4 prompt tokens; 3 words
    assert data["usage"] == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}


def test_echo_uses_last_user_message_and_text_parts(server: FakeServer) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "second "}, {"type": "text", "text": "part"}]},
    ]
    with client_for(server) as c:
        data = c.post("/chat/completions", json={"model": "m", "messages": messages}).json()
    assert data["choices"][0]["message"]["content"] == "second part"
    assert data["usage"]["prompt_tokens"] == (8 + 5 + 2 + 11 + 3) // 4


@pytest.mark.parametrize(
    ("reply", "expected", "finish"),
    [
        ("a fixed reply", "a fixed reply", "stop"),
        (lambda body: body["model"].upper(), "DEEPSEEK-V3.2", "stop"),
        (ScriptedReply("cut short", "content_filter"), "cut short", "content_filter"),
        (lambda body: ScriptedReply("x", "tool_calls"), "x", "tool_calls"),
    ],
)
def test_scripted_replies(reply: object, expected: str, finish: str) -> None:
    with FakeServer(reply=reply) as server, client_for(server) as c:  # type: ignore[arg-type]
        choice = c.post("/chat/completions", json=chat_body()).json()["choices"][0]
    assert choice["message"]["content"] == expected
    assert choice["finish_reason"] == finish


def test_max_tokens_truncates_with_length(server: FakeServer) -> None:
    server.reply = "one two three four five"
    with client_for(server) as c:
        data = c.post("/chat/completions", json=chat_body(max_tokens=2)).json()
        assert data["choices"][0]["message"]["content"] == "one two"
        assert data["choices"][0]["finish_reason"] == "length"
        assert data["usage"]["completion_tokens"] == 2
        server.reply = "lorem"
        data = c.post("/chat/completions", json=chat_body(max_completion_tokens=200)).json()
        assert data["usage"]["completion_tokens"] == 200


def test_models_and_model_retrieve(server: FakeServer) -> None:
    with client_for(server) as c:
        data = c.get("/models").json()
        assert data["object"] == "list"
        assert {
            "id": "deepseek-v3.2",
            "object": "model",
            "created": 1735689600,
            "owned_by": "deepseek",
        } in data["data"]
        assert all(set(m) == {"id", "object", "created", "owned_by"} for m in data["data"])
        assert c.get("/models/deepseek-v3.2").json()["id"] == "deepseek-v3.2"
        r = c.get("/models/nope")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "model_not_found"


def test_custom_models_and_strict_models() -> None:
    with FakeServer(models=["a", "b"], strict_models=True) as server, client_for(server) as c:
        assert [m["id"] for m in c.get("/models").json()["data"]] == ["a", "b"]
        assert (
            c.post("/chat/completions", json={"model": "a", "messages": [{"role": "user"}]}).status_code
            == 200
        )
        r = c.post("/chat/completions", json={"model": "zzz", "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 404
        assert r.json()["error"] == {
            "message": "The model `zzz` does not exist or you do not have access to it. Served models: `a`, `b`.",
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }


def test_quota_object_is_configurable_and_counts_usage() -> None:
    server = FakeServer(quota_limit=1000, quota_used=100, quota_reset_at="2026-12-01T00:00:00Z")
    with server, client_for(server) as c:
        assert c.get("/quota").json() == {
            "object": "quota",
            "remaining": 900,
            "limit": 1000,
            "used": 100,
            "unit": "tokens",
            "reset_at": "2026-12-01T00:00:00Z",
        }
        c.post("/chat/completions", json=chat_body("hello big world"))  # 4 + 3 tokens
        assert c.get("/quota").json()["used"] == 107
        server.quota_limit = None
        assert c.get("/quota").status_code == 404


def test_enforce_quota_gives_insufficient_quota_429() -> None:
    with FakeServer(quota_limit=10, enforce_quota=True) as server, client_for(server) as c:
        assert c.post("/chat/completions", json=chat_body("x" * 40)).status_code == 200  # uses 13
        r = c.post("/chat/completions", json=chat_body())
        assert r.status_code == 429
        assert "retry-after" not in r.headers
        assert r.json()["error"]["type"] == "insufficient_quota"
        assert c.get("/quota").json()["remaining"] == 0


@pytest.mark.parametrize("auth", [None, "Bearer hs_test_wrongwrongwrongwrongwron", "Basic abc", "Bearer"])
def test_missing_or_wrong_key_is_401(server: FakeServer, auth: str | None) -> None:
    headers = {} if auth is None else {"Authorization": auth}
    with httpx.Client(base_url=server.url, timeout=5) as c:
        r = c.post("/chat/completions", json=chat_body(), headers=headers)
    assert r.status_code == 401
    assert REQ_ID.match(r.headers["x-request-id"])
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["type"] == "invalid_api_key"


def test_bearer_scheme_is_case_insensitive_and_auth_can_be_off(server: FakeServer) -> None:
    with httpx.Client(base_url=server.url, timeout=5) as c:
        assert c.get("/models", headers={"authorization": f"bearer {server.api_key}"}).status_code == 200
        server.require_auth = False
        assert c.get("/models").status_code == 200


def test_given_api_key_is_used() -> None:
    with FakeServer(api_key="hs_test_mine") as server, httpx.Client(timeout=5) as c:
        assert server.api_key == "hs_test_mine"
        assert (
            c.get(server.url + "/models", headers={"Authorization": "Bearer hs_test_mine"}).status_code == 200
        )


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/v1/nope", 404), ("GET", "/models", 404), ("GET", "/", 404),
     ("GET", "/v1/chat/completions", 405), ("POST", "/v1/models", 405), ("DELETE", "/v1/quota", 405)],
)  # fmt: skip
def test_unknown_paths_and_methods(server: FakeServer, method: str, path: str, status: int) -> None:
    with httpx.Client(timeout=5, headers={"Authorization": f"Bearer {server.api_key}"}) as c:
        r = c.request(method, f"http://127.0.0.1:{server.port}{path}")
    assert r.status_code == status
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("content", "param"),
    [(b"{not json", None), (b'{"messages": [{"role": "user", "content": "x"}]}', "model"),
     (b'{"model": "m"}', "messages"), (b'{"model": "m", "messages": []}', "messages")],
)  # fmt: skip
def test_bad_chat_bodies_are_400(server: FakeServer, content: bytes, param: str | None) -> None:
    with client_for(server) as c:
        r = c.post("/chat/completions", content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["error"]["param"] == param


def test_request_log_records_everything(server: FakeServer) -> None:
    with client_for(server) as c:
        r = c.post("/chat/completions?x=1", json=chat_body("hi"), headers={"X-Custom": "Yes"})
        c.get("/models")
    first, second = server.requests
    assert isinstance(first, RecordedRequest)
    assert (first.method, first.path, first.query, first.status) == (
        "POST",
        "/v1/chat/completions",
        "x=1",
        200,
    )
    assert first.headers["x-custom"] == "Yes"
    assert first.headers["authorization"] == f"Bearer {server.api_key}"
    assert all(k == k.lower() for k in first.headers)
    assert first.body == chat_body("hi")
    assert first.raw_body == r.request.content
    assert first.request_id == r.headers["x-request-id"]
    assert first.fault is None
    assert first.finished_at is not None and first.started_at <= first.finished_at <= second.started_at
    assert (second.method, second.body, second.raw_body) == ("GET", None, b"")
    server.reset()
    assert server.requests == []
    assert server.connections_total == server.open_connections


def test_request_log_bounded_by_max_recorded() -> None:
    with FakeServer(max_recorded=3) as server, client_for(server) as c:
        for i in range(5):
            c.post("/chat/completions", json=chat_body(f"m{i}"))
        assert [r.body["messages"][0]["content"] for r in server.requests] == ["m2", "m3", "m4"]


def test_custom_handler_overrides_and_falls_through(server: FakeServer) -> None:
    calls: list[str] = []

    @server.on("POST", "/v1/chat/completions")
    def handler(req: RecordedRequest) -> Response | None:
        calls.append(req.body["messages"][-1]["content"])
        if req.body["messages"][-1]["content"] == "teapot":
            return Response(418, {"error": {"message": "teapot", "type": "x", "param": None, "code": None}})
        return None

    server.on("GET", "/health", lambda req: {"ok": True})
    server.on("GET", "/boom", lambda req: 1 / 0)
    with client_for(server) as c:
        assert c.post("/chat/completions", json=chat_body("teapot")).status_code == 418
        assert (
            c.post("/chat/completions", json=chat_body("tea")).json()["choices"][0]["message"]["content"]
            == "tea"
        )
        r = c.get("/health")
        assert (r.status_code, r.json()) == (200, {"ok": True})
        r = c.get("/boom")
        assert r.status_code == 500
        assert "ZeroDivisionError" in r.json()["error"]["message"]
        server.on("GET", "/health")  # no handler: removes the route
        assert c.get("/health").status_code == 404
    assert calls == ["teapot", "tea"]


def test_latency_delays_each_response() -> None:
    sleep = RecordedSleep()
    with FakeServer(latency=0.15, sleep=sleep) as server, client_for(server) as c:
        c.get("/models")  # connect first
        t0 = time.perf_counter()
        c.get("/models")
        elapsed = time.perf_counter() - t0
    assert sleep.delays == [0.15, 0.15]  # exactly the latency, once per response
    assert elapsed >= 0.15

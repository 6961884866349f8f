"""Keys stay hidden in every exception a hostile server can provoke, on every transport; URLs with
credentials, fake loopback names and unsafe redirects are refused; short placeholder keys are left alone."""

from __future__ import annotations

import asyncio
import json
import pickle
import traceback
from typing import Any

import httpx
import pytest
import respx

from holysheep import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APIStreamError,
    AsyncClient,
    AuthenticationError,
    Client,
    InsecureTransportError,
    InvalidRequestError,
    RedirectRefusedError,
    StreamInterruptedError,
)

from .conftest import KEY, chat
from .hostile import HostileServer, Req, fixed, head

PIECES = {KEY[i:i + 8] for i in range(len(KEY) - 7)}


def texts_of(err: BaseException) -> list[str]:
    """Everything a user (or a log) could read from the error and its whole chain."""
    out = ["".join(traceback.format_exception(err)), pickle.dumps(err, protocol=5).decode("latin-1")]
    seen: set[int] = set()
    stack: list[BaseException | None] = [err]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out += [str(e), repr(e), repr(vars(e)) if hasattr(e, "__dict__") else ""]
        req = getattr(e, "_request", None) or getattr(e, "request", None)
        if isinstance(req, httpx.Request):
            out.append(repr(dict(req.headers)))
        resp = getattr(e, "response", None)
        if isinstance(resp, httpx.Response):
            out += [repr(dict(resp.request.headers)), resp.content.decode("latin-1")]
        out.append(repr(getattr(e, "body", None)))
        stack += [e.__cause__, e.__context__]
    return out


def assert_clean(err: BaseException) -> None:
    for text in texts_of(err):
        leaked = [p for p in PIECES if p in text]
        assert not leaked, f"key leaked ({leaked[:2]}) in {text[:400]!r}"


def sse(*events: str) -> bytes:
    return head(content_type="text/event-stream") + b"".join(f"data: {e}\n\n".encode() for e in events)


def test_key_echoed_in_a_stream_error_event_is_redacted(kind: str) -> None:
    event = json.dumps({"error": {"message": f"bad key Bearer {KEY}", "type": "auth", "param": [KEY, 1]}})

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(sse(event))

    with HostileServer(scenario) as srv, pytest.raises(APIStreamError) as info:
        chat(kind, srv.url, stream=True)
    assert_clean(info.value)
    assert "bad key Bearer hs_…WXYZ" in str(info.value)
    assert isinstance(info.value.body, dict) and info.value.body["param"] == ["hs_…WXYZ", 1]  # structure kept


def test_key_echoed_in_a_bad_stream_chunk_is_redacted(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(sse(f"not json, your key is {KEY}"))

    with HostileServer(scenario) as srv, pytest.raises(APIResponseValidationError) as info:
        chat(kind, srv.url, stream=True)
    assert_clean(info.value)
    assert "hs_…WXYZ" in str(info.value.body)


def test_validation_error_body_is_redacted(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, f"<html>key={KEY}</html>".encode(), content_type="text/html"))

    with HostileServer(scenario) as srv, pytest.raises(APIResponseValidationError) as info:
        chat(kind, srv.url)
    assert_clean(info.value)
    assert info.value.body == "<html>key=hs_…WXYZ</html>"


def test_status_error_pickles_without_the_raw_response(kind: str) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_api_key"}})

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(401, body.encode()))

    with HostileServer(scenario) as srv, pytest.raises(AuthenticationError) as info:
        chat(kind, srv.url)
    err = info.value
    assert_clean(err)
    data = pickle.dumps(err)
    assert not [p for p in PIECES if p.encode() in data]
    back = pickle.loads(data)
    assert type(back) is AuthenticationError and back.status_code == 401 and back.message == err.message
    assert back.response is None and back.request is None and back.body == err.body


def test_connection_error_cause_carries_no_key(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.transport.abort()  # reset before any response

    with HostileServer(scenario) as srv, pytest.raises(APIConnectionError) as info:
        chat(kind, srv.url)
    assert_clean(info.value)
    cause = info.value.__cause__
    if cause is not None:
        req = getattr(cause, "_request", None)
        assert req is None or req.headers["authorization"] == "Bearer hs_...WXYZ"


def test_interrupted_stream_cause_carries_no_key(kind: str) -> None:
    chunk = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                        "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]})

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        payload = f"data: {chunk}\n\n".encode()
        w.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        await w.drain()
        await asyncio.sleep(0.05)
        w.transport.abort()

    with HostileServer(scenario) as srv, pytest.raises(StreamInterruptedError) as info:
        chat(kind, srv.url, stream=True)
    assert_clean(info.value)
    assert info.value.partial_text == "x"


# --- base_url and loopback -----------------------------------------------------------------------


@pytest.mark.parametrize("url", [f"https://user:{KEY}@api.example.com/v1", f"http://{KEY}@127.0.0.1:8000/v1",
                                 f"https://:{KEY}@[::1]:9/v1"])
def test_userinfo_in_base_url_is_refused_and_never_printed(url: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Client(api_key="any-key-at-all", base_url=url)
    assert info.value.field == "base_url" and "user information" in str(info.value)
    assert_clean(info.value)


@pytest.mark.parametrize("host", ["evil.localhost", "localhost.evil.com", "127.0.0.1.nip.io", "10.0.0.5"])
def test_only_real_loopback_may_get_a_key_over_http(host: str) -> None:
    with pytest.raises(InsecureTransportError):
        Client(api_key="self-hosted-key", base_url=f"http://{host}:8000/v1")
    with pytest.raises(InsecureTransportError):  # a key passed only as a header counts too
        Client(base_url=f"http://{host}:8000/v1", default_headers={"Authorization": "Bearer abc"})
    client = Client(base_url=f"http://{host}:8000/v1")  # no key at all: fine
    with pytest.raises(InsecureTransportError):
        client.with_options(default_headers={"X-Api-Key": "abc"})


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "[::1]"])
def test_loopback_hosts_may_use_http(host: str) -> None:
    Client(api_key="self-hosted-key", base_url=f"http://{host}:8000/v1").close()


# --- redirects ----------------------------------------------------------------------------------


def test_cross_origin_307_is_refused_and_the_target_gets_nothing(kind: str) -> None:
    async def target(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, b"{}"))

    with HostileServer(target) as other:
        async def redirect(req: Req, w: asyncio.StreamWriter) -> None:
            w.write(fixed(307, b"", location=f"{other.url}/chat/completions"))

        with HostileServer(redirect) as srv, pytest.raises(RedirectRefusedError, match="another origin") as info:
            chat(kind, srv.url)
        assert other.requests == []
        assert len(srv.requests) == 1
        assert_clean(info.value)


def test_same_origin_308_is_followed(kind: str) -> None:
    completion = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "moved"}, "finish_reason": "stop"}]}).encode()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        if req.path.startswith("/v2"):
            w.write(fixed(200, completion))
        else:
            w.write(fixed(308, b"", location="/v2/chat/completions"))

    with HostileServer(scenario) as srv:
        result = chat(kind, srv.url)
    assert result.choices[0].message.content == "moved"
    assert [r.path for r in srv.requests] == ["/v1/chat/completions", "/v2/chat/completions"]
    assert srv.requests[1].body == srv.requests[0].body


def test_303_becomes_a_get_without_the_body(kind: str) -> None:
    completion = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "seen"}, "finish_reason": "stop"}]}).encode()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        if req.path == "/v1/result":
            w.write(fixed(200, completion))
        else:
            w.write(fixed(303, b"", location="/v1/result"))

    with HostileServer(scenario) as srv:
        result = chat(kind, srv.url)
    assert result.choices[0].message.content == "seen"
    assert [(r.method, r.path) for r in srv.requests] == [("POST", "/v1/chat/completions"), ("GET", "/v1/result")]
    assert srv.requests[1].body == b""
    assert srv.requests[1].headers["authorization"] == f"Bearer {KEY}"  # same origin: the key stays


def test_cross_origin_get_redirect_drops_the_key(kind: str) -> None:
    models = json.dumps({"object": "list", "data": [{"id": "m1", "object": "model"}]}).encode()

    async def target(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(200, models))

    with HostileServer(target) as other:
        async def redirect(req: Req, w: asyncio.StreamWriter) -> None:
            w.write(fixed(302, b"", location=f"{other.url}/models"))

        with HostileServer(redirect) as srv:
            assert [m.id for m in list_models(kind, srv.url)] == ["m1"]
        assert [r.path for r in other.requests] == ["/v1/models"]
        assert "authorization" not in other.requests[0].headers


def test_endless_redirects_fail_as_a_refused_redirect(kind: str) -> None:
    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(307, b"", location="/v1/chat/completions"))

    with HostileServer(scenario) as srv, pytest.raises(RedirectRefusedError, match="Redirect loop") as info:
        chat(kind, srv.url)
    assert len(srv.requests) == (11 if kind == "aiohttp" else 21)  # aiohttp's limit is 10, httpx's 20
    assert_clean(info.value)


def list_models(kind: str, base_url: str) -> Any:
    if kind == "sync":
        with Client(api_key=KEY, base_url=base_url, max_retries=0) as client:
            return list(client.models.list())

    async def go() -> Any:
        async with AsyncClient(api_key=KEY, base_url=base_url, max_retries=0,
                               http_backend="httpx" if kind == "httpx" else "aiohttp") as client:
            return list(await client.models.list())

    return asyncio.run(go())


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_https_to_http_downgrade_is_refused(respx_mock: respx.MockRouter, status: int) -> None:
    respx_mock.post("https://api.example.com/v1/chat/completions").respond(
        status, headers={"location": "http://api.example.com/v1/chat/completions"})
    plain = respx_mock.route(scheme="http").respond(200, json={})
    with Client(api_key="self-hosted-key-123", base_url="https://api.example.com/v1", max_retries=0) as client, \
            pytest.raises(RedirectRefusedError, match="plain http") as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert plain.call_count == 0
    assert "clear text" in str(info.value)


# --- issue 17 item 6: placeholder keys do not mangle server text ---------------------------------


@pytest.mark.parametrize("key", ["db", "EMPTY", "ollama", "none", "mock"])
def test_short_placeholder_keys_are_not_redacted(key: str) -> None:
    body: dict[str, Any] = {"error": {"message": "No connected db. mock none EMPTY ollama",
                                      "type": "no_db_connection"}}

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(400, json.dumps(body).encode()))

    with HostileServer(scenario) as srv, pytest.raises(APIStatusError) as info:
        chat("sync", srv.url, client_kw={"api_key": key})
    assert "No connected db. mock none EMPTY ollama" in str(info.value)
    assert "type=no_db_connection" in str(info.value)
    assert info.value.body == body["error"]


def test_long_key_is_redacted_only_as_a_whole_token() -> None:
    from holysheep._core.keys import redact

    key = "sk-local-0123456789"
    assert redact(f"key {key}, again:{key}.", key) == "key …6789, again:…6789."
    assert redact(f"x{key}y and {key}_suffix", key) == f"x{key}y and {key}_suffix"

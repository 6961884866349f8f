"""URLs, streams and smaller items (issue 31, items 10 and 11), on every transport."""

from __future__ import annotations

import asyncio
import json

import pytest

from holysheep import Client, InvalidRequestError, RateLimitError

from .conftest import MESSAGES, chat
from .hostile import HostileServer, Req, fixed, head

COMPLETION = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                      "finish_reason": "stop"}]}).encode()
SECRET = "sk-SUPERSECRET1234abcd"


async def _ok(req: Req, w: asyncio.StreamWriter) -> None:
    w.write(fixed(200, COMPLETION))


# --- 10. a base_url with a query string; tool calls without index -----------------------------------------


def test_base_url_with_a_query_keeps_its_path_and_query(kind: str) -> None:
    with HostileServer(_ok) as srv:
        url = srv.url.replace("/v1", "/openai/deployments/d1/v1") + "?api-version=2024-10-21"
        assert chat(kind, url).choices[0].message.content == "ok"
        assert [r.path for r in srv.requests] == ["/openai/deployments/d1/v1/chat/completions?api-version=2024-10-21"]


def _chunk(tool_calls: list[dict[str, object]]) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": None}]}
    return f"data: {json.dumps(body)}\n\n".encode()


def test_streamed_tool_calls_with_ids_but_no_index_stay_apart(kind: str) -> None:
    fn = "function"

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(head(content_type="text/event-stream"))
        w.write(_chunk([{"id": "call_a", "type": fn, "function": {"name": "f", "arguments": '{"x": '}}]))
        w.write(_chunk([{"function": {"arguments": "1}"}}]))
        w.write(_chunk([{"id": "call_b", "type": fn, "function": {"name": "g", "arguments": '{"y": 2}'}}]))
        w.write(b"data: [DONE]\n\n")

    with HostileServer(scenario) as srv:
        if kind == "sync":
            with Client(api_key=SECRET, base_url=srv.url, max_retries=0) as client:
                stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                with stream:
                    final = stream.get_final_completion()
        else:
            from .conftest import make_client

            async def go() -> object:
                async with make_client(kind, srv.url) as client:
                    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                    async with stream:
                        return await stream.get_final_completion()

            final = asyncio.run(go())
    calls = final.choices[0].message.tool_calls  # type: ignore[attr-defined]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_a", "f", '{"x": 1}'), ("call_b", "g", '{"y": 2}')]


# --- 11. a key glued into x-request-id; duplicate x-request-id; extra_body overrides -----------------------


def test_a_key_glued_into_the_request_id_is_masked_and_duplicates_read_alike(kind: str) -> None:
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(fixed(429, body, x_request_id=f"req_{SECRET}").replace(
            b"\r\n\r\n", f"\r\nx-request-id: req_second{SECRET}\r\n\r\n".encode(), 1))

    with HostileServer(scenario) as srv, pytest.raises(RateLimitError) as info:
        chat(kind, srv.url, client_kw={"api_key": SECRET})
    err = info.value
    assert SECRET not in str(err) and SECRET not in repr(err)
    assert err.request_id == "req_…abcd"  # the first of the two, on every transport


@pytest.mark.parametrize("name", ["model", "messages", "stream"])
def test_extra_body_may_not_override_what_the_sdk_sets(name: str) -> None:
    with HostileServer(_ok) as srv:
        with Client(api_key=SECRET, base_url=srv.url) as client, pytest.raises(InvalidRequestError) as info:
            client.chat.completions.create(model="m", messages=MESSAGES, extra_body={name: True})
        assert srv.requests == []
    assert info.value.field == f"extra_body.{name}" and f"Pass {name}= to create()" in str(info.value)


@pytest.mark.parametrize("how", ["mounts", "check_hostname"])
@pytest.mark.parametrize("sync", [True, False])
def test_tls_warning_sees_mounts_and_check_hostname(how: str, sync: bool) -> None:
    import ssl

    import httpx

    from holysheep import AsyncClient

    if how == "mounts":
        transport = (httpx.HTTPTransport if sync else httpx.AsyncHTTPTransport)(verify=False)
        kw: dict[str, object] = {"mounts": {"https://": transport}}
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        kw = {"verify": ctx}
    http = (httpx.Client if sync else httpx.AsyncClient)(**kw)  # type: ignore[arg-type]
    with pytest.warns(UserWarning, match="anyone on the network path"):
        if sync:
            Client(api_key=SECRET, base_url="https://example.invalid/v1", http_client=http).close()
        else:
            asyncio.run(AsyncClient(api_key=SECRET, base_url="https://example.invalid/v1",
                                    http_client=http).aclose())


def test_conflicting_content_lengths_are_refused_on_every_transport(kind: str) -> None:
    from holysheep import APIConnectionError

    async def scenario(req: Req, w: asyncio.StreamWriter) -> None:
        w.write(f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(COMPLETION)}\r\n"
                f"content-length: {len(COMPLETION) + 5}\r\n\r\n".encode() + COMPLETION)

    with HostileServer(scenario) as srv, pytest.raises(APIConnectionError):
        chat(kind, srv.url)

"""A key passed per call (``extra_headers={"Authorization": ...}``) gets the same plain-http check as
``api_key=`` and ``default_headers``: refused before any request unless the host is loopback or
``allow_insecure_http=True``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, InsecureTransportError, InvalidRequestError
from holysheep._core.config import check_key_transport

REMOTE = "http://10.0.0.5:8000/v1"
MESSAGES = [{"role": "user", "content": "hi"}]
COMPLETION = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def _create(kind: str, base_url: str, headers: dict[str, str | None], **client_kw: Any) -> Any:
    if kind == "sync":
        with Client(base_url=base_url, max_retries=0, **client_kw) as client:
            return client.chat.completions.create(model="m", messages=MESSAGES, extra_headers=headers)

    async def go() -> Any:
        async with AsyncClient(base_url=base_url, max_retries=0, **client_kw) as client:
            return await client.chat.completions.create(model="m", messages=MESSAGES, extra_headers=headers)

    import asyncio

    return asyncio.run(go())


@pytest.mark.parametrize("header", ["Authorization", "x-api-key", "API-Key", "Proxy-Authorization"])
def test_a_per_call_key_over_plain_http_is_refused(kind: str, header: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{REMOTE}/chat/completions").respond(200, json=COMPLETION)
    with pytest.raises(InsecureTransportError, match=r"plain http:// to '10\.0\.0\.5'.*allow_insecure_http=True"):
        _create(kind, REMOTE, {header: "Bearer hs_" + "k" * 32})
    assert route.call_count == 0


def test_a_per_call_key_in_a_stream_and_a_parse_is_refused(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{REMOTE}/chat/completions").respond(200, json=COMPLETION)
    headers = {"Authorization": "Bearer hs_" + "k" * 32}
    with Client(base_url=REMOTE) as client:
        with pytest.raises(InsecureTransportError):
            client.chat.completions.create(model="m", messages=MESSAGES, stream=True, extra_headers=headers)
        with pytest.raises(InsecureTransportError):
            client.chat.completions.parse(model="m", messages=MESSAGES, response_format={"type": "object"},
                                          extra_headers=headers)
    assert route.call_count == 0


@pytest.mark.parametrize(("base_url", "client_kw", "headers"), [
    (REMOTE, {"allow_insecure_http": True}, {"Authorization": "Bearer abc"}),  # the user said so
    ("http://127.0.0.1:8000/v1", {}, {"Authorization": "Bearer abc"}),  # loopback
    ("https://gpu.example.com/v1", {}, {"Authorization": "Bearer abc"}),  # TLS
    (REMOTE, {}, {"Authorization": None, "X-Trace": "t1"}),  # no key in these headers
])
def test_what_may_be_sent(kind: str, base_url: str, client_kw: dict[str, Any], headers: dict[str, str | None],
                          respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{base_url}/chat/completions").respond(200, json=COMPLETION)
    assert _create(kind, base_url, headers, **client_kw).choices[0].message.content == "ok"
    assert route.call_count == 1
    sent = route.calls[0].request.headers
    assert sent.get("authorization") == headers.get("Authorization")


def test_one_check_serves_every_way_a_key_is_given() -> None:
    assert issubclass(InsecureTransportError, InvalidRequestError)  # a bad argument, found before any I/O
    url = httpx.URL(REMOTE)
    for key, headers in (("k", None), (None, {"Authorization": "Bearer k"}), (None, {"X-API-KEY": "k"})):
        with pytest.raises(InsecureTransportError):
            check_key_transport(url, False, key, headers)
        check_key_transport(url, True, key, headers)
        check_key_transport(httpx.URL("http://[::1]:8000/v1"), False, key, headers)
    check_key_transport(url, False, None, {"Authorization": None, "Accept": "x"})


async def test_a_batch_item_with_a_per_call_key_over_http_fails_alone(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{REMOTE}/chat/completions").respond(200, json=COMPLETION)
    items = [{"messages": MESSAGES, "extra_headers": {"Authorization": "Bearer hs_" + "k" * 32}}, "hello"]
    async with AsyncClient(base_url=REMOTE, http_backend="httpx") as client:
        results = await client.chat.completions.batch(items, model="m", progress=False, check_quota=False)
    refused, sent = results
    assert isinstance(refused.error, InsecureTransportError) and refused.attempts == 0
    assert refused.error.field == "extra_headers"
    assert sent.ok and route.call_count == 1
    assert "authorization" not in route.calls[0].request.headers

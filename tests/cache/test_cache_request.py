"""The cache key is the whole request that was sent (query, deployment headers, method, body), and only
completions that answered are stored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

from holysheep import Client
from holysheep.cache import KEY_HEADERS, MemoryCache, ResponseCache, request_key

from ..core.conftest import BASE, COMPLETION, KEY

URL = f"{BASE}/chat/completions"
MESSAGES = [{"role": "user", "content": "hi"}]


def _echo_deployment(request: httpx.Request) -> httpx.Response:
    """A reply that names the deployment it came from (query, then header)."""
    name = request.url.params.get("deployment") or request.headers.get("azureml-model-deployment") or "-"
    body = {**COMPLETION, "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": f"from {name}"}}]}
    return httpx.Response(200, json=body)


def test_extra_query_is_part_of_the_key(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(url__startswith=URL).mock(side_effect=_echo_deployment)
    with Client(api_key=KEY, cache=MemoryCache()) as client:
        replies = [client.chat.completions.create(model="m", messages=MESSAGES, extra_query={"deployment": d})
                   for d in ("A", "B", "A", "B")]
    assert [r.choices[0].message.content for r in replies] == ["from A", "from B", "from A", "from B"]
    assert [r.cached for r in replies] == [False, False, True, True]
    assert route.call_count == 2


def test_a_deployment_header_is_part_of_the_key_and_other_headers_are_not(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(side_effect=_echo_deployment)
    with Client(api_key=KEY, cache=MemoryCache()) as client:
        create = client.chat.completions.create
        a = create(model="m", messages=MESSAGES, extra_headers={"AzureML-Model-Deployment": "A"})
        b = create(model="m", messages=MESSAGES, extra_headers={"azureml-model-deployment": "B"})
        again = create(model="m", messages=MESSAGES, extra_headers={"azureml-model-deployment": "B",
                                                                    "x-request-note": "other"})
    assert (a.choices[0].message.content, b.choices[0].message.content) == ("from A", "from B")
    assert again.cached and again.choices[0].message.content == "from B" and route.call_count == 2


def test_the_key_covers_method_query_headers_and_base_query() -> None:
    body = {"model": "m", "messages": MESSAGES}
    base = request_key(body, base_url=BASE)
    assert base is not None
    assert request_key(body, base_url=BASE, method="PUT") != base
    assert request_key(body, base_url=BASE, query={"api-version": "1"}) != base
    assert request_key(body, base_url=f"{BASE}?api-version=1") == request_key(body, base_url=BASE,
                                                                             query={"api-version": "1"})
    assert request_key(body, base_url=f"{BASE}?api-version=1", query={"api-version": "2"}) == request_key(
        body, base_url=BASE, query={"api-version": "2"})  # the call's extra_query replaces the base URL's
    for name in KEY_HEADERS:
        assert request_key(body, base_url=BASE, headers={name: "x"}) != base, name
    assert request_key(body, base_url=BASE, headers={"authorization": f"Bearer {KEY}", "idempotency-key": "k",
                                                     "x-request-id": "r"}) == base


def _reply(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {**COMPLETION, "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant",
                                                                                       **message}}]}


@pytest.mark.parametrize("reply", [
    _reply({"content": None, "refusal": "I can't help with that."}),
    _reply({"content": "partial"}, finish="content_filter"),
    _reply({"content": ""}, finish="length"),
    _reply({"content": None}, finish="length"),
], ids=["refusal", "content-filter", "empty-length", "null-length"])
def test_only_completions_that_answered_are_stored(reply: dict[str, Any], respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=reply))
    store = MemoryCache()
    with Client(api_key=KEY, cache=ResponseCache(store)) as client:
        for _ in range(2):
            assert not client.chat.completions.create(model="m", messages=MESSAGES).cached
    assert route.call_count == 2 and store.stats().entries == 0


def test_an_answer_with_tool_calls_only_is_stored(respx_mock: respx.MockRouter) -> None:
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    route = respx_mock.post(URL).mock(return_value=httpx.Response(
        200, json=_reply({"content": None, "tool_calls": [call]}, finish="tool_calls")))
    with Client(api_key=KEY, cache=MemoryCache()) as client:
        replies = [client.chat.completions.create(model="m", messages=MESSAGES) for _ in range(2)]
    assert [r.cached for r in replies] == [False, True] and route.call_count == 1


def test_a_batch_keys_its_items_by_extra_query_too() -> None:
    from holysheep.testing import FakeServer

    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        items = [{"messages": MESSAGES, "extra_query": {"deployment": d}} for d in ("A", "B")]
        store = MemoryCache()
        first = client.chat.completions.batch(items, model="gpt-4.1", cache=ResponseCache(store))
        again = client.chat.completions.batch(items, model="gpt-4.1", cache=ResponseCache(store))
        queries = sorted(r.query for r in server.requests if r.path.endswith("/chat/completions"))
    assert first.stats.requests == 2 and again.stats.cached == 2 and again.stats.requests == 0
    assert queries == ["deployment=A", "deployment=B"] and store.stats().entries == 2

"""Client behaviour against respx: parsing, headers, errors, retries (each test runs sync and async)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

import holysheep
from holysheep import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ChatCompletion,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)

from .conftest import BASE, COMPLETION, KEY, MESSAGES, run

FAST = {"initial_retry_delay": 0.0, "max_retry_delay": 0.0}


def create(client: Any, **kw: Any) -> Any:
    return client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, **kw)


def test_create_parses_and_keeps_unknown_fields(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(
        200, json=COMPLETION, headers={"x-request-id": "req_abc"}
    )
    resp = run(kind, lambda c: create(c, temperature=0.7, max_tokens=500))
    assert isinstance(resp, ChatCompletion)
    assert resp.choices[0].message.content == "Hello!"
    assert resp.usage is not None and resp.usage.total_tokens == 7
    assert resp.request_id == "req_abc"
    assert resp.retries_taken == 0
    assert resp.elapsed_s > 0
    assert resp.model_extra == {"brand_new_field": {"kept": True}}
    assert resp.to_dict()["brand_new_field"] == {"kept": True}
    assert json.loads(resp.to_json())["id"] == "chatcmpl-1"
    sent = route.calls.last.request
    assert json.loads(sent.content) == {
        "model": "deepseek-v3.2", "messages": MESSAGES, "temperature": 0.7, "max_tokens": 500,
    }
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["user-agent"].startswith("holysheep-python/")
    assert sent.headers["x-holysheep-retry-count"] == "0"
    assert sent.headers["idempotency-key"].startswith("hs-")


def test_transport_facts_survive_copy_pickle_and_parse_into_a_subclass(respx_mock: respx.MockRouter) -> None:
    import copy
    import pickle

    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=[
        httpx.Response(500, json={"error": {"message": "boom"}}),
        httpx.Response(200, json=COMPLETION, headers={"x-request-id": "req_abc"})])
    with holysheep.Client(api_key=KEY, base_url=BASE, **FAST) as client:
        resp = create(client)
    facts = ("req_abc", 1, "primary")
    for other in (resp.model_copy(), resp.model_copy(deep=True), copy.copy(resp), copy.deepcopy(resp),
                  pickle.loads(pickle.dumps(resp))):
        assert (other.request_id, other.retries_taken, other.served_by) == facts
        assert other.elapsed_s == resp.elapsed_s > 0
        assert other == resp
    assert not resp.__pydantic_private__  # no private attributes (None; {} on pydantic 2.7): they cost a validation
    bare = ChatCompletion.model_validate(COMPLETION)  # built by hand: the defaults
    assert (bare.request_id, bare.retries_taken, bare.elapsed_s, bare.served_by) == (None, 0, 0.0, "primary")


def test_extra_body_headers_and_typed_messages(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    msgs = [holysheep.Message(role="system", content="Be brief"), {"role": "user", "content": "Hi"}]

    def call(c: Any) -> Any:
        return c.chat.completions.create(
            model="gpt-4.1", messages=msgs, extra_body={"top_k": 5}, extra_headers={"X-Trace": "t1"},
            stop=["\n"], seed=7, tools=[{"type": "function", "function": {"name": "f"}}], user="u1",
        )

    run(kind, call)
    sent = route.calls.last.request
    body = json.loads(sent.content)
    assert body["messages"][0] == {"role": "system", "content": "Be brief"}
    assert body["top_k"] == 5 and body["stop"] == ["\n"] and body["seed"] == 7 and body["user"] == "u1"
    assert sent.headers["x-trace"] == "t1"


def test_models_and_quota(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.get(f"{BASE}/models").respond(200, json={"object": "list", "data": [
        {"id": "deepseek-v3.2", "object": "model", "owned_by": "holysheep"}, {"id": "gpt-4.1"}]})
    respx_mock.get(f"{BASE}/quota").respond(200, json={"remaining": 1234.5, "limit": 5000, "plan": "pro"})
    models = run(kind, lambda c: c.models.list())
    assert [m.id for m in models] == ["deepseek-v3.2", "gpt-4.1"]
    quota = run(kind, lambda c: c.quota.retrieve())
    assert quota.remaining == 1234.5 and quota.limit == 5000
    assert quota.model_extra == {"plan": "pro"}


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (422, UnprocessableEntityError),
    ],
)
def test_non_retryable_status_sends_exactly_one_request(
    kind: str, respx_mock: respx.MockRouter, status: int, cls: type[Exception]
) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(
        status, json={"error": {"message": "nope", "type": "invalid_request_error", "code": "bad"}},
        headers={"x-request-id": "req_1"},
    )
    with pytest.raises(cls) as info:
        run(kind, create, max_retries=5, **FAST)
    assert route.call_count == 1
    err = info.value
    assert isinstance(err, holysheep.APIStatusError)
    assert err.status_code == status
    assert err.request_id == "req_1"
    assert err.type == "invalid_request_error" and err.code == "bad"
    assert err.body == {"message": "nope", "type": "invalid_request_error", "code": "bad"}  # openai's e.body
    assert err.response is not None
    assert err.response.json() == {"error": {"message": "nope", "type": "invalid_request_error", "code": "bad"}}
    assert "nope" in str(err) and f"HTTP {status}" in str(err)


@pytest.mark.parametrize(
    ("status", "cls"),
    [(408, holysheep.APIStatusError), (409, ConflictError), (429, RateLimitError), (500, InternalServerError),
     (502, InternalServerError), (503, InternalServerError), (504, InternalServerError)],
)
@pytest.mark.parametrize("failures", [1, 2])
def test_retryable_status_then_success(
    kind: str, respx_mock: respx.MockRouter, status: int, cls: type[Exception], failures: int
) -> None:
    responses = [httpx.Response(status, json={"error": {"message": "busy"}}) for _ in range(failures)]
    route = respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=[*responses,
                                                                         httpx.Response(200, json=COMPLETION)])
    resp = run(kind, create, max_retries=2, **FAST)
    assert resp.retries_taken == failures
    assert route.call_count == failures + 1
    counts = [c.request.headers["x-holysheep-retry-count"] for c in route.calls]
    assert counts == [str(i) for i in range(failures + 1)]
    keys = {c.request.headers["idempotency-key"] for c in route.calls}
    assert len(keys) == 1


@pytest.mark.parametrize(
    ("exc", "cls"),
    [(httpx.ConnectError("refused"), APIConnectionError), (httpx.ReadTimeout("slow"), APITimeoutError),
     (httpx.RemoteProtocolError("reset"), APIConnectionError)],
)
def test_transport_errors_retry_then_raise_typed(
    kind: str, respx_mock: respx.MockRouter, exc: Exception, cls: type[Exception]
) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=exc)
    with pytest.raises(cls) as info:
        run(kind, create, max_retries=3, **FAST)
    assert route.call_count == 4
    assert isinstance(info.value.__cause__, httpx.HTTPError)
    route.side_effect = [exc, httpx.Response(200, json=COMPLETION)]
    assert run(kind, create, max_retries=3, **FAST).retries_taken == 1


def test_retries_exhausted_raise_last_error(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(503, json={"error": {"message": "down"}})
    with pytest.raises(InternalServerError) as info:
        run(kind, create, max_retries=2, **FAST)
    assert route.call_count == 3
    assert info.value.retries_taken == 2
    assert "after 2 retries" in str(info.value)


def test_per_call_max_retries_and_on_retry_hook(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(500)
    seen: list[tuple[int, Any, float]] = []
    with pytest.raises(InternalServerError):
        run(kind, lambda c: create(c, max_retries=1), on_retry=lambda a, e, d: seen.append((a, e, d)),
            max_retries=5, **FAST)
    assert route.call_count == 2
    assert [(a, type(e).__name__, d) for a, e, d in seen] == [(1, "InternalServerError", 0.0)]


def test_retry_after_ms_is_honoured(kind: str, respx_mock: respx.MockRouter) -> None:
    delays: list[float] = []
    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=[
        httpx.Response(429, headers={"retry-after-ms": "5"}), httpx.Response(200, json=COMPLETION)])
    resp = run(kind, create, on_retry=lambda a, e, d: delays.append(d))
    assert delays == [0.005]
    assert resp.retries_taken == 1


def test_retry_after_above_cap_is_not_retried(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(429, headers={"retry-after": "3600"})
    with pytest.raises(RateLimitError) as info:
        run(kind, create, max_retries=3)
    assert route.call_count == 1
    assert info.value.retry_after == 3600.0


def test_x_should_retry_overrides(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=[
        httpx.Response(400, headers={"x-should-retry": "true"}), httpx.Response(200, json=COMPLETION)])
    assert run(kind, create, **FAST).retries_taken == 1
    assert route.call_count == 2


def test_x_should_retry_false_stops_retries(kind: str, respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(503, headers={"x-should-retry": "false"})
    with pytest.raises(InternalServerError):
        run(kind, create, **FAST)
    assert route.call_count == 1


def test_malformed_success_body_is_typed(kind: str, respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{BASE}/chat/completions").respond(200, content=b"{not json")
    with pytest.raises(holysheep.APIResponseValidationError) as info:
        run(kind, create)
    assert info.value.status_code == 200


def test_with_options_shares_pool_and_overrides(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(500)
    client = holysheep.Client(api_key=KEY, **FAST)
    fast = client.with_options(max_retries=0, timeout=3.0)
    assert fast._http is client._http
    assert fast.timeout.read == 3.0 and client.timeout.read == 600.0
    with pytest.raises(InternalServerError):
        create(fast)
    assert route.call_count == 1
    fast.close()
    assert not client._http.is_closed
    client.close()
    assert client._http.is_closed


def test_per_call_timeout_is_sent_to_transport(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    with holysheep.Client(api_key=KEY) as client:
        create(client, timeout=1.5)
    assert route.calls.last.request.extensions["timeout"]["read"] == 1.5


def test_user_http_client_is_used_and_not_closed(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)
    http = httpx.Client()
    with holysheep.Client(api_key=KEY, http_client=http) as client:
        assert create(client).id == "chatcmpl-1"
    assert not http.is_closed
    http.close()


def test_sync_client_works_inside_running_event_loop(respx_mock: respx.MockRouter) -> None:
    """Jupyter runs cells inside a live loop; the sync client must not call asyncio.run."""
    import asyncio

    respx_mock.post(f"{BASE}/chat/completions").respond(200, json=COMPLETION)

    async def cell() -> str | None:
        with holysheep.Client(api_key=KEY) as client:
            return create(client).choices[0].message.content

    assert asyncio.run(cell()) == "Hello!"


def test_cost_from_price_catalog(respx_mock: respx.MockRouter) -> None:
    body = {**COMPLETION, "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}}
    respx_mock.post(f"{BASE}/chat/completions").respond(200, json=body)
    with holysheep.Client(api_key=KEY) as client:
        resp = create(client)
    from holysheep.pricing import price_for

    price = price_for("deepseek-v3.2")
    expected = price.input_per_m if price.input_per_m is not None else price.blended_per_m
    assert resp.cost == pytest.approx(expected)

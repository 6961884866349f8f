"""Table tests of the sans-I/O decision code: ``Call`` (every status x attempt x Retry-After x quota case)
and ``CallPlan`` over the router (every fallback transition), with injected randomness and clock."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from holysheep import Fallback
from holysheep._clients.resources.chat import parse_chat_completion
from holysheep._core.call import Call
from holysheep._core.call_plan import CallPlan
from holysheep._core.config import make_config
from holysheep._core.fallback import CircuitBreaker, Router
from holysheep._core.request import build_chat_spec

KEY = "hs_TestKey0123456789abcdefWXYZ"
OK_BODY = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}]}


def _config(**kw: Any) -> Any:
    args: dict[str, Any] = {"api_key": KEY, "base_url": None, "timeout": 10.0, "max_retries": 2,
                            "initial_retry_delay": 0.5, "max_retry_delay": 8.0, "max_retry_after": 60.0,
                            "stream_idle_timeout": None, "default_headers": None, "allow_insecure_http": False,
                            "on_retry": None}
    args.update(kw)
    return make_config(**args)


def _spec(**params: Any) -> Any:
    return build_chat_spec(model="m", messages=[{"role": "user", "content": "hi"}], stream=False, params=params,
                           parse=parse_chat_completion)


def _resp(status: int, headers: dict[str, str] | None = None, body: Any = None) -> httpx.Response:
    content = json.dumps(body if body is not None else {"error": {"message": "x"}}).encode()
    return httpx.Response(status, headers=headers or {}, content=content,
                          request=httpx.Request("POST", "https://api.holysheep.ai/v1/chat/completions"))


QUOTA = {"error": {"message": "no quota", "type": "insufficient_quota", "code": "insufficient_quota"}}

# status, headers, body, retries already taken, -> (retried?, delay)
TABLE: list[tuple[int, dict[str, str], Any, int, bool, float]] = [
    (500, {}, None, 0, True, 0.5),
    (500, {}, None, 1, True, 1.0),
    (500, {}, None, 2, False, 0.0),  # max_retries=2 spent
    (502, {}, None, 0, True, 0.5),
    (503, {"retry-after": "3"}, None, 0, True, 3.0),
    (503, {"retry-after-ms": "250", "retry-after": "9"}, None, 0, True, 0.25),
    (429, {}, None, 0, True, 0.5),
    (429, {"retry-after": "2"}, None, 1, True, 2.0),
    (429, {"retry-after": "61"}, None, 0, False, 0.0),  # above max_retry_after: the caller decides
    (429, {"retry-after": "-1"}, None, 0, True, 0.5),  # garbage: backoff
    # a zero (or past) delay asks for nothing: the backoff's step, growing with the retries (issue 45: 760/s)
    (429, {"retry-after": "0"}, None, 0, True, 0.5),
    (429, {"retry-after": "0.0"}, None, 1, True, 1.0),
    (429, {"retry-after-ms": "0"}, None, 1, True, 1.0),
    (503, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None, 1, True, 1.0),
    (429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", "date": "Wed, 21 Oct 2015 07:29:00 GMT"}, None, 0,
     True, 0.5),
    (429, {}, QUOTA, 0, False, 0.0),  # exhausted quota is never retried
    (402, {}, QUOTA, 0, False, 0.0),
    (408, {}, None, 0, True, 0.5),
    (409, {}, None, 0, True, 0.5),
    (400, {}, None, 0, False, 0.0),
    (401, {}, None, 0, False, 0.0),
    (403, {}, None, 0, False, 0.0),
    (404, {}, None, 0, False, 0.0),
    (422, {}, None, 0, False, 0.0),
    (400, {"x-should-retry": "true"}, None, 0, True, 0.5),
    (503, {"x-should-retry": "false"}, None, 0, False, 0.0),
]


@pytest.mark.parametrize("status, headers, body, taken, retried, delay", TABLE)
def test_call_decision_table(status: int, headers: dict[str, str], body: Any, taken: int, retried: bool,
                             delay: float) -> None:
    hooks: list[tuple[int, float]] = []
    call = Call(_config(on_retry=lambda n, e, d: hooks.append((n, d))), _spec(), rand=lambda: 0.0)
    call.retries_taken = taken
    outcome = call.on_response(_resp(status, headers, body))
    assert outcome.retry is retried
    assert outcome.error is not None and outcome.error.status_code == status  # type: ignore[attr-defined]
    if retried:
        assert outcome.delay == delay and call.retries_taken == taken + 1
        assert hooks == [(taken + 1, delay)]
    else:
        assert call.retries_taken == taken and hooks == []


def test_jitter_is_injected_and_bounded() -> None:
    for rand, expected in ((0.0, 2.0), (1.0, 1.5), (0.5, 1.75)):
        call = Call(_config(max_retries=5), _spec(), rand=lambda r=rand: r)
        call.retries_taken = 2
        assert call.on_response(_resp(500)).delay == expected


def test_transport_errors_and_invalid_bodies_are_retried() -> None:
    call = Call(_config(max_retries=1), _spec(), rand=lambda: 0.0)
    out = call.on_transport_error(httpx.ConnectError("refused"), None)
    assert out.retry and out.delay == 0.5
    bad = httpx.Response(200, content=b"{not json", request=httpx.Request("POST", "https://x/"))
    final = call.on_response(bad)
    assert final.retry is False and type(final.error).__name__ == "APIResponseValidationError"  # retries spent
    call2 = Call(_config(max_retries=1), _spec(), rand=lambda: 0.0)
    assert call2.on_response(bad).retry is True


def test_only_call_writes_attempt_headers_from_its_count_and_given_key() -> None:
    call = Call(_config(), _spec(extra_headers={"x-holysheep-retry-count": "9"}), idempotency_key="hs-fixed")
    seen = []
    for _ in range(3):
        call.begin_attempt()
        request = call.next_request(None)
        seen.append((request.headers["x-holysheep-retry-count"], request.headers["idempotency-key"]))
        call.on_response(_resp(500))
    assert seen == [("0", "hs-fixed"), ("1", "hs-fixed"), ("2", "hs-fixed")]


def _router(n: int, breaker: CircuitBreaker | None = None) -> Router:
    fbs = [Fallback(base_url=f"http://127.0.0.1:{9000 + i}/v1", name=f"fb{i}") for i in range(n)]
    return Router(_config(max_retries=0), fbs, breaker)


# outcomes per endpoint -> (endpoints tried in order, final: "ok" or the error status)
ROUTES: list[tuple[list[int], list[str], str]] = [
    ([200], ["primary"], "ok"),
    ([500, 200], ["primary", "fb0"], "ok"),
    ([500, 503, 200], ["primary", "fb0", "fb1"], "ok"),
    ([500, 503, 502], ["primary", "fb0", "fb1"], "502"),
    ([400], ["primary"], "400"),  # the caller's error: no fallback
    ([401], ["primary"], "401"),
    ([429], ["primary", "fb0"], "ok"),
    ([500, 404], ["primary", "fb0"], "404"),
]


@pytest.mark.parametrize("statuses, tried, final", ROUTES)
def test_call_plan_fallback_transitions(statuses: list[int], tried: list[str], final: str) -> None:
    router = _router(2)
    plan = CallPlan(_config(max_retries=0), _spec(), router, rand=lambda: 0.0)
    served: list[str] = []
    replies = iter(statuses + [200] * 3)
    while True:
        served.append(plan.call.served_by)
        status = next(replies)
        outcome = plan.call.on_response(_resp(status, body=OK_BODY if status == 200 else None))
        delay = plan.after(outcome)
        if delay is None:
            break
        assert delay == 0.0  # moving to the next endpoint is immediate
    assert served == tried
    if final == "ok":
        assert plan.result().served_by == tried[-1]
    else:
        assert plan.error is not None and str(plan.error.status_code) == final  # type: ignore[attr-defined]


def test_open_circuit_skips_the_primary_until_the_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=30.0, clock=lambda: now[0])
    router = _router(1, breaker)
    for _ in range(2):
        plan = CallPlan(_config(max_retries=0), _spec(), router)
        plan.after(plan.call.on_response(_resp(500)))
        plan.after(plan.call.on_response(_resp(200, body=OK_BODY)))
    assert breaker.state == "open"
    plan = CallPlan(_config(max_retries=0), _spec(), router)
    assert plan.call.served_by == "fb0"
    now[0] = 30.0
    assert breaker.state == "half_open"
    plan = CallPlan(_config(max_retries=0), _spec(), router)
    assert plan.call.served_by == "primary"  # one probe
    assert plan.after(plan.call.on_response(_resp(200, body=OK_BODY))) is None
    assert breaker.state == "closed"


@pytest.mark.parametrize(("timeout", "idle", "read"), [
    (3.0, 300.0, 3.0), (600.0, 300.0, 300.0), (10.0, None, 10.0), (httpx.Timeout(5.0, read=None), 300.0, 300.0)])
def test_a_streams_byte_read_waits_the_idle_limit_but_never_past_the_callers_read_timeout(
        timeout: Any, idle: float | None, read: float) -> None:
    spec = build_chat_spec(model="m", messages=[{"role": "user", "content": "hi"}], stream=True, params={},
                           parse=parse_chat_completion)
    call = Call(_config(timeout=timeout, stream_idle_timeout=idle), spec)
    assert call.timeout.read == read
    assert call.idle_timeout == idle

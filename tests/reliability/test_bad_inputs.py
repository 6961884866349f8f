"""A table of malformed inputs across the SDK: each raises the expected typed error with a helpful
message, and none touches the network (a respx router that answers nothing records every attempt)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from holysheep import (
    Client,
    HolySheepError,
    InsecureTransportError,
    InvalidAPIKeyError,
    InvalidRequestError,
    UnknownGPUError,
    UnknownModelError,
)

KEY = "hs_BadInputTable0123456789xyz"
MSG = [{"role": "user", "content": "hi"}]


def _create(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        args: dict[str, Any] = {"model": "deepseek-v3.2", "messages": MSG, **kw}
        with Client(api_key=KEY) as c:
            return c.chat.completions.create(**args)
    return run


def _client(**kw: Any) -> Callable[[], object]:
    return lambda: Client(**{"api_key": KEY, **kw}).close()


def _est(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep.estimator import estimate_inference_memory

        return estimate_inference_memory(**{"model": "llama-3.1-8b", **kw})
    return run


def _train(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep.estimator import estimate_training_memory

        return estimate_training_memory(**{"model": "llama-3.1-8b", **kw})
    return run


def _pick(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep.hardware import pick_hardware

        return pick_hardware(**{"model_or_estimate": "llama-3.1-8b", **kw})
    return run


def _gpu(name: str) -> Callable[[], object]:
    def run() -> object:
        from holysheep.hardware import gpu

        return gpu(name)
    return run


CASES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # keys
    ("key: OpenAI-style", _client(api_key="sk-proj-0123456789abcdefghij"), InvalidAPIKeyError, "hs_"),
    ("key: too short", _client(api_key="hs_abc"), InvalidAPIKeyError, "at least 16"),
    ("key: bad characters", _client(api_key="hs_0123456789abcdef!@#$"), InvalidAPIKeyError, "A-Z"),
    ("key: empty", _client(api_key=""), InvalidAPIKeyError, "HOLYSHEEP_API_KEY"),
    ("key: not a string", _client(api_key=12345), InvalidAPIKeyError, "string"),
    # base URLs
    ("url: no scheme", _client(base_url="api.holysheep.ai/v1"), InvalidRequestError, "scheme"),
    ("url: ftp", _client(base_url="ftp://api.holysheep.ai/v1"), InvalidRequestError, "http"),
    ("url: blank", _client(base_url="   "), InvalidRequestError, "base_url"),
    ("url: plain http remote", _client(base_url="http://10.0.0.5:8000/v1", api_key="k"), InsecureTransportError,
     "allow_insecure_http"),
    ("client: negative timeout", _client(timeout=-1), InvalidRequestError, "timeout"),
    ("client: max_retries None", _client(max_retries=None), InvalidRequestError, "max_retries"),
    # messages and params
    ("messages: empty", _create(messages=[]), InvalidRequestError, "at least one message"),
    ("messages: a string", _create(messages="hi"), InvalidRequestError, "list of messages"),
    ("messages: unknown role", _create(messages=[{"role": "robot", "content": "x"}]), InvalidRequestError,
     "unknown role"),
    ("messages: content int", _create(messages=[{"role": "user", "content": 7}]), InvalidRequestError,
     "string or a list"),
    ("messages: part without type", _create(messages=[{"role": "user", "content": [{"text": "x"}]}]),
     InvalidRequestError, "type"),
    ("param: temperature 3", _create(temperature=3), InvalidRequestError, "[0.0, 2.0]"),
    ("param: top_p -1", _create(top_p=-1), InvalidRequestError, "[0.0, 1.0]"),
    ("param: max_tokens 0", _create(max_tokens=0), InvalidRequestError, ">= 1"),
    ("param: n 0", _create(n=0), InvalidRequestError, ">= 1"),
    ("param: stop dict", _create(stop={"a": 1}), InvalidRequestError, "list of strings"),
    ("param: timeout -1", _create(timeout=-1), InvalidRequestError, "> 0 seconds"),
    ("param: model empty", _create(model=""), InvalidRequestError, "non-empty"),
    # estimator
    ("estimator: unknown model", _est(model="llama-9000"), UnknownModelError, "list_models"),
    ("estimator: unknown quant", _est(quant="int3"), InvalidRequestError, "int4-awq"),
    ("estimator: context -1", _est(context=-1), InvalidRequestError, "context"),
    ("estimator: batch 0", _est(batch=0), InvalidRequestError, "batch"),
    ("training: zero stage 5", _train(zero_stage=5), InvalidRequestError, "zero_stage"),
    ("training: unknown optimizer", _train(optimizer="adamw9000"), InvalidRequestError, "optimizer"),
    # hardware and picker
    ("hardware: unknown GPU", _gpu("H1000"), UnknownGPUError, "Did you mean"),
    ("picker: max_gpus 0", _pick(max_gpus=0), InvalidRequestError, "max_gpus"),
    ("picker: objective", _pick(objective="fastest"), InvalidRequestError, "cost, cost_per_token, latency, throughput"),
    ("picker: negative budget", _pick(budget_per_hour=-1), InvalidRequestError, "budget_per_hour"),
]


@pytest.mark.parametrize(("name", "call", "exc", "needle"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(respx_mock: respx.MockRouter, name: str, call: Callable[[], object], exc: type[Exception],
                   needle: str) -> None:
    route = respx_mock.route().respond(599)
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, HolySheepError)
    assert needle in str(info.value), str(info.value)
    assert route.call_count == 0


def _async_create(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        import asyncio

        from holysheep import AsyncClient

        async def go() -> object:
            async with AsyncClient(api_key=KEY) as c:
                return await c.chat.completions.create(**{"model": "deepseek-v3.2", "messages": MSG, **kw})
        return asyncio.run(go())
    return run


def _async_client(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep import AsyncClient

        return AsyncClient(**{"api_key": KEY, **kw})
    return run


def _with(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        with Client(api_key=KEY) as c:
            return c.with_options(**kw)
    return run


def _breaker(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep import CircuitBreaker

        return CircuitBreaker(**kw)
    return run


def _fallback(**kw: Any) -> Callable[[], object]:
    def run() -> object:
        from holysheep import Fallback

        return Client(api_key=KEY, fallbacks=[Fallback(**{"base_url": "http://127.0.0.1:9/v1", **kw})])
    return run


def _selfhosted(**kw: Any) -> Callable[[], object]:
    return lambda: Client(**{"base_url": "http://127.0.0.1:9/v1", **kw}).close()


U = "user"
# (name, call, field the InvalidRequestError must name, text the message must contain)
FIELD_CASES: list[tuple[str, Callable[[], object], str, str]] = [
    # client construction
    ("client: default_headers a string", _client(default_headers="x"), "default_headers", "dict"),
    ("client: default_headers int value", _client(default_headers={"x": 1}), "default_headers['x']", "string"),
    ("client: default_headers non-ascii", _client(default_headers={"x": "é"}), "default_headers['x']", "ASCII"),
    ("client: default_headers CRLF", _client(default_headers={"x": "a\r\nb: c"}), "default_headers['x']",
     "line break"),
    ("client: default_headers int name", _client(default_headers={1: "a"}), "default_headers", "header name"),
    ("client: default_headers name with colon", _client(default_headers={"a:b": "c"}), "default_headers",
     "header name"),
    ("url: unclosed IPv6", _client(base_url="http://[::1"), "base_url", "not a valid URL"),
    ("url: not a string", _client(base_url=123), "base_url", "non-empty URL"),
    ("url: port out of range", _client(base_url="http://127.0.0.1:99999/v1"), "base_url", "not a valid URL"),
    ("url: userinfo", _client(base_url="https://u:p4ssw0rd-secret@api.example.com/v1"), "base_url",
     "user information"),
    ("client: timeout a string", _client(timeout="5"), "timeout", "seconds"),
    ("client: timeout NaN", _client(timeout=float("nan")), "timeout", "> 0"),
    ("client: max_retries -1", _client(max_retries=-1), "max_retries", ">= 0"),
    ("client: max_retries 1.5", _client(max_retries=1.5), "max_retries", "integer"),
    ("client: initial_retry_delay -1", _client(initial_retry_delay=-1), "initial_retry_delay", ">= 0"),
    ("client: initial_retry_delay str", _client(initial_retry_delay="x"), "initial_retry_delay", ">= 0"),
    ("client: max_retry_delay NaN", _client(max_retry_delay=float("nan")), "max_retry_delay", ">= 0"),
    ("client: max_retry_after str", _client(max_retry_after="x"), "max_retry_after", ">= 0"),
    ("client: stream_idle_timeout -1", _client(stream_idle_timeout=-1), "stream_idle_timeout", ">= 0"),
    ("client: stream_idle_timeout str", _client(stream_idle_timeout="x"), "stream_idle_timeout", ">= 0"),
    ("client: allow_insecure_http str", _selfhosted(allow_insecure_http="yes"), "allow_insecure_http",
     "True or False"),
    ("client: on_retry not callable", _client(on_retry=5), "on_retry", "callable"),
    ("client: http_client object", _client(http_client=object()), "http_client", "httpx.Client"),
    ("client: fallbacks a Fallback", _client(fallbacks="http://x"), "fallbacks", "list"),
    ("client: fallbacks[0] a string", _client(fallbacks=["http://127.0.0.1:9/v1"]), "fallbacks[0]",
     "holysheep.Fallback"),
    ("client: circuit_breaker str", _client(circuit_breaker="x", fallbacks=[]), "circuit_breaker",
     "CircuitBreaker"),
    ("client: max_response_bytes 0", _client(max_response_bytes=0), "max_response_bytes", ">= 1"),
    ("client: max_response_bytes str", _client(max_response_bytes="64MB"), "max_response_bytes", "integer"),
    ("client: max_sse_event_bytes -5", _client(max_sse_event_bytes=-5), "max_sse_event_bytes", ">= 1"),
    ("async: http_backend unknown", _async_client(http_backend="curl"), "http_backend", "'aiohttp', 'httpx'"),
    ("async: sync http_client", _async_client(http_client=httpx.Client()), "http_client", "AsyncClient"),
    # circuit breaker and fallbacks
    ("breaker: cooldown_s str", _breaker(cooldown_s="x"), "cooldown_s", ">= 0"),
    ("breaker: cooldown_s -1", _breaker(cooldown_s=-1), "cooldown_s", ">= 0"),
    ("breaker: cooldown_s NaN", _breaker(cooldown_s=float("nan")), "cooldown_s", ">= 0"),
    ("breaker: threshold 0", _breaker(failure_threshold=0), "failure_threshold", ">= 1"),
    ("breaker: clock not callable", _breaker(clock=5), "clock", "callable"),
    ("fallback: ftp url", _fallback(base_url="ftp://127.0.0.1/v1"), "base_url", "http"),
    ("fallback: models a string", _fallback(models="x"), "fallbacks[0].models", "str to str"),
    ("fallback: userinfo", _fallback(base_url="http://a:secret-pass@127.0.0.1/v1"), "base_url",
     "user information"),
    # with_options
    ("with_options: default_headers str", _with(default_headers="x"), "default_headers", "dict"),
    ("with_options: default_headers int", _with(default_headers={"a": 1}), "default_headers['a']", "string"),
    ("with_options: timeout str", _with(timeout="x"), "timeout", "seconds"),
    ("with_options: max_retries -1", _with(max_retries=-1), "max_retries", ">= 0"),
    ("with_options: initial_retry_delay -1", _with(initial_retry_delay=-1), "initial_retry_delay", ">= 0"),
    ("with_options: max_retry_delay str", _with(max_retry_delay="x"), "max_retry_delay", ">= 0"),
    ("with_options: stream_idle_timeout str", _with(stream_idle_timeout="x"), "stream_idle_timeout", ">= 0"),
    ("with_options: on_retry int", _with(on_retry=3), "on_retry", "callable"),
    # create(): messages
    ("messages: lone surrogate", _create(messages=[{"role": U, "content": "a\ud800b"}]), "messages[0].content",
     "surrogate"),
    ("messages: surrogate in a part", _create(messages=[{"role": U, "content": [{"type": "text",
                                                                                  "text": "\udc00"}]}]),
     "messages[0].content[0].text", "surrogate"),
    ("messages: object() as name", _create(messages=[{"role": U, "content": "x", "name": object()}]),
     "messages[0].name", "object"),
    ("messages: None", _create(messages=None), "messages", "list of messages"),
    ("messages: None item", _create(messages=[None]), "messages[0]", "dict or Message"),
    ("messages: content missing", _create(messages=[{"role": U}]), "messages[0].content", "missing"),
    ("async: lone surrogate", _async_create(messages=[{"role": U, "content": "\ud800"}]), "messages[0].content",
     "surrogate"),
    # create(): body parameters
    ("param: tools [object()]", _create(tools=[object()]), "tools[0]", "dict"),
    ("param: tools ['x']", _create(tools=["x"]), "tools[0]", "dict"),
    ("param: tools a dict", _create(tools={"type": "function"}), "tools", "list"),
    ("param: tool function str", _create(tools=[{"type": "function", "function": "f"}]), "tools[0].function",
     "name"),
    ("param: tool_choice int", _create(tool_choice=5), "tool_choice", "string or a dict"),
    ("param: response_format str", _create(response_format="json"), "response_format", "dict"),
    ("param: stream_options str", _create(stream_options="x"), "stream_options", "dict"),
    ("param: include_usage str", _create(stream_options={"include_usage": "yes"}),
     "stream_options.include_usage", "True or False"),
    ("param: logit_bias str", _create(logit_bias="x"), "logit_bias", "token ids"),
    ("param: logprobs str", _create(logprobs="yes"), "logprobs", "True or False"),
    ("param: top_logprobs 50", _create(top_logprobs=50), "top_logprobs", "0 to 20"),
    ("param: parallel_tool_calls str", _create(parallel_tool_calls="no"), "parallel_tool_calls", "True or False"),
    ("param: user int", _create(user=5), "user", "string"),
    ("param: metadata str", _create(metadata="x"), "metadata", "dict of strings"),
    ("param: metadata int value", _create(metadata={"a": 1}), "metadata", "dict of strings"),
    ("param: temperature str", _create(temperature="hot"), "temperature", "number"),
    ("param: temperature NaN", _create(temperature=float("nan")), "temperature", "number"),
    ("param: top_p True", _create(top_p=True), "top_p", "number"),
    ("param: presence_penalty 5", _create(presence_penalty=5), "presence_penalty", "[-2.0, 2.0]"),
    ("param: frequency_penalty -3", _create(frequency_penalty=-3), "frequency_penalty", "[-2.0, 2.0]"),
    ("param: max_tokens 1.5", _create(max_tokens=1.5), "max_tokens", "integer"),
    ("param: max_completion_tokens -1", _create(max_completion_tokens=-1), "max_completion_tokens", ">= 1"),
    ("param: n True", _create(n=True), "n", "integer"),
    ("param: seed str", _create(seed="42"), "seed", "integer"),
    ("param: stop [1]", _create(stop=[1]), "stop", "list of strings"),
    ("param: stream str", _create(stream="yes"), "stream", "True or False"),
    ("param: model None", _create(model=None), "model", "non-empty"),
    ("param: model int", _create(model=5), "model", "non-empty"),
    # create(): transport options
    ("extra_body: a string", _create(extra_body="x"), "extra_body", "dict"),
    ("extra_body: object()", _create(extra_body={"x": object()}), "extra_body.x", "cannot be sent as JSON"),
    ("extra_body: int key", _create(extra_body={1: "a"}), "extra_body", "keys must be strings"),
    ("extra_body: surrogate", _create(extra_body={"x": ["\ud800"]}), "extra_body.x[0]", "surrogate"),
    ("extra_headers: int value", _create(extra_headers={"x": 1}), "extra_headers['x']", "string"),
    ("extra_headers: non-ascii", _create(extra_headers={"x": "café"}), "extra_headers['x']", "ASCII"),
    ("extra_headers: CRLF", _create(extra_headers={"x": "a\r\nInjected: 1"}), "extra_headers['x']",
     "line break"),
    ("extra_headers: a string", _create(extra_headers="x"), "extra_headers", "dict"),
    ("call: timeout str", _create(timeout="x"), "timeout", "seconds"),
    ("call: max_retries -1", _create(max_retries=-1), "max_retries", ">= 0"),
    ("call: stream_idle_timeout 0", _create(stream=True, stream_idle_timeout=0), "stream_idle_timeout", "> 0"),
    # unknown keyword arguments
    ("unknown: temprature", _create(temprature=0.5), "temprature", "Did you mean 'temperature'"),
    ("unknown: max_token", _create(max_token=5), "max_token", "Did you mean 'max_tokens'"),
    ("unknown: Temperature", _create(Temperature=0.5), "Temperature", "Did you mean 'temperature'"),
    ("unknown: top_k", _create(top_k=20), "top_k", "extra_body"),
    ("async unknown: temprature", _async_create(temprature=0.5), "temprature", "Did you mean 'temperature'"),
]


@pytest.mark.parametrize(("name", "call", "field", "needle"), FIELD_CASES, ids=[c[0] for c in FIELD_CASES])
def test_bad_input_names_the_field(respx_mock: respx.MockRouter, name: str, call: Callable[[], object],
                                   field: str, needle: str) -> None:
    route = respx_mock.route().respond(599)
    with pytest.raises(InvalidRequestError) as info:
        call()
    assert info.value.field == field, (info.value.field, str(info.value))
    assert needle in str(info.value), str(info.value)
    assert route.call_count == 0


def test_table_is_big_enough() -> None:
    assert len(CASES) + len(FIELD_CASES) >= 91


BAD_LINES = [
    ("not json", "{nope", "line 1"),
    ("json but not an object", "[1, 2]", "line 1"),
    ("no messages", json.dumps({"custom_id": "a", "body": {"model": "m"}}), "messages"),
    ("bad role", json.dumps({"custom_id": "b", "messages": [{"role": "x", "content": "y"}]}), "role"),
]


@pytest.mark.parametrize(("name", "line", "needle"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_jsonl_line_is_reported_and_others_run(respx_mock: respx.MockRouter, tmp_path: Path, name: str,
                                                   line: str, needle: str) -> None:
    from holysheep.batch import run_jsonl

    route = respx_mock.route().respond(599)
    src = tmp_path / "in.jsonl"
    src.write_text(line + "\n")
    dst = tmp_path / "out.jsonl"
    with Client(api_key=KEY) as client:
        run_jsonl(client, src, dst, model="deepseek-v3.2", check_quota=False)
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert len(rows) == 1 and "error" in rows[0]
    assert needle in json.dumps(rows[0]), rows[0]
    assert route.call_count == 0

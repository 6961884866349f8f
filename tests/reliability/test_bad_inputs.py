"""A table of malformed inputs across the SDK: each raises the expected typed error with a helpful
message, and none touches the network (a respx router that answers nothing records every attempt)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    ("picker: objective", _pick(objective="fastest"), InvalidRequestError, "cost, latency, throughput"),
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


def test_table_is_big_enough() -> None:
    assert len(CASES) + len(BAD_LINES) >= 30


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

"""Tool loops inside a batch of Responses API items (#44): ``client.responses.batch(..., tools=[functions])`` runs
each item's loop as a chat batch does (the engine asks the format's `ToolTurns`): every turn is one request through
the batch's admission and spend accounting, with its own idempotency key; each call's result goes back as a
``function_call_output`` item after the reply's own output items; one result per input, in input order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from holysheep import AsyncClient, Client, InvalidRequestError, MaxTurnsError, function_tool
from holysheep._core.wire import EMBEDDINGS
from holysheep._core.wire.responses_tools import ResponseToolRunResult
from holysheep.batch import run_jsonl
from holysheep.testing import FakeServer, Response, Script
from holysheep.types.responses import Response as ApiResponse

from .conftest import call

PRICES = {"m": (1.0, 2.0)}
"""USD per million input and output tokens: the spend the batch counts for every turn."""


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


ADD = {"type": "function", "name": "add", "description": "Add two numbers.",
       "parameters": function_tool(add)["function"]["parameters"], "strict": True}
"""``add`` as the Responses API takes a function tool (flat), in every turn's body."""


def batch(kind: str, server: FakeServer, requests: list[Any], **kwargs: Any) -> Any:
    """``client.responses.batch(requests, **kwargs)`` on a fresh client of ``kind`` (``sync``/``async``)."""
    kwargs.setdefault("model", "m")
    if kind == "sync":
        with Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return client.responses.batch(requests, **kwargs)

    async def go() -> Any:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
            return await client.responses.batch(requests, **kwargs)

    return asyncio.run(go())


def sent(server: FakeServer) -> list[Any]:
    """The model requests the server saw (the batch's quota check left out)."""
    return [r for r in server.requests if r.path != "/v1/quota"]


def by_prompt(server: FakeServer) -> dict[str, list[Any]]:
    """Each item's requests (in the order sent), by the text of its first input item."""
    out: dict[str, list[Any]] = {}
    for request in sent(server):
        out.setdefault(prompt(request.body), []).append(request)
    return out


def prompt(body: dict[str, Any]) -> str:
    """The prompt text of a request body: its ``input`` string, or its first input item's content."""
    value = body["input"]
    return value if isinstance(value, str) else str(value[0]["content"])


def items(response: ApiResponse) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in response.output]


def sums() -> Script:
    return Script([{"match": "sum", "replies": [{"tool_calls": [call("add", a=1, b=2), call("add", a=3, b=4)]},
                                                "sums: {tool_results}"]}])


def test_parallel_calls_each_item_s_turns_and_bodies_in_order(kind: str) -> None:
    requests = [{"custom_id": f"c{i}", "input": f"sum {i}"} for i in range(4)]
    with FakeServer(reply=sums(), latency=0.02) as server:
        results = batch(kind, server, requests, tools=[add], max_turns=3, concurrency=2)
        assert [r.path for r in sent(server)] == ["/v1/responses"] * 8  # 2 turns per item, no more
        assert server.max_in_flight == 2  # every turn holds one of the batch's 2 slots
        turns = by_prompt(server)
    assert [r.custom_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert results.stats.requests == 8 and results.stats.retries == 0
    for i, result in enumerate(results):
        assert result.ok and result.attempts == 2, result.error
        run = result.tool_run
        assert isinstance(run, ResponseToolRunResult) and run.turns == 2
        assert result.response is run.response and run.output_text == "sums: 3; 7"
        first, second = turns[f"sum {i}"]
        user = {"role": "user", "content": f"sum {i}"}
        assert first.body == {"model": "m", "input": [user], "tools": [ADD]}
        fc1, fc2 = items(run.responses[0])
        assert (fc1["type"], fc1["arguments"], fc2["arguments"]) == ("function_call", '{"a":1,"b":2}', '{"a":3,"b":4}')
        assert second.body == {"model": "m", "tools": [ADD], "input": [
            user, fc1, fc2, {"type": "function_call_output", "call_id": fc1["call_id"], "output": "3"},
            {"type": "function_call_output", "call_id": fc2["call_id"], "output": "7"}]}
        assert second.headers["idempotency-key"] == f"{first.headers['idempotency-key']}-turn2"
        assert result.messages == second.body["input"] + items(run.response)
        assert [(c.id, c.name, c.output, c.error, c.turn) for c in result.tool_calls] == [
            (fc1["call_id"], "add", 3, None, 1), (fc2["call_id"], "add", 7, None, 1)]


def test_a_failing_or_unknown_tool_is_the_call_s_output(kind: str) -> None:
    def broken(x: int) -> str:
        """Always fails."""
        raise RuntimeError("boom")

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("broken", x=1), call("nope")]}, "ok"]}])
    with FakeServer(reply=script) as server:
        results = batch(kind, server, ["go 0", "go 1"], tools=[broken])
        turns = by_prompt(server)
        assert len(sent(server)) == 4
    expected = ["Error: the tool 'broken' raised RuntimeError: boom",
                "Error: the tool 'nope' does not exist. Available tools: broken."]
    for i, result in enumerate(results):
        assert result.ok and result.response.output_text == "ok"
        outputs = [item["output"] for item in turns[f"go {i}"][1].body["input"]
                   if item.get("type") == "function_call_output"]
        assert outputs == expected and [c.error for c in result.tool_calls] == expected


def test_max_turns_ends_each_item_with_its_conversation(kind: str) -> None:
    script = Script([{"match": "loop", "reply": {"tool_calls": [call("add", a=1, b=1)]}}])  # never answers
    with FakeServer(reply=script) as server:
        results = batch(kind, server, ["loop 0", "loop 1", "loop 2"], tools=[add], max_turns=2)
        assert len(sent(server)) == 6
    assert results.stats.requests == 6 and [r.index for r in results] == [0, 1, 2]
    for i, result in enumerate(results):
        error = result.error
        assert isinstance(error, MaxTurnsError) and "max_turns=2" in str(error)
        assert [m.get("type") for m in error.messages] == [None, "function_call", "function_call_output",
                                                           "function_call"]
        assert error.messages[0] == {"role": "user", "content": f"loop {i}"}
        assert isinstance(error.result, ResponseToolRunResult) and error.result.turns == 2


def test_agents_and_plain_items_mixed_keep_order_and_each_turn_is_spent(kind: str) -> None:
    """A plain item sends one request, an agent two; the batch's tokens and spend count every turn exactly."""
    requests = ["plain a", {"custom_id": "t", "input": "sum x", "tools": [add]}, "plain b"]
    with FakeServer(reply=sums()) as server:
        results = batch(kind, server, requests, prices=PRICES, max_cost_usd=1.0, max_output_tokens=50)
        assert [prompt(r.body) for r in sent(server)].count("sum x") == 2
        assert len(sent(server)) == 4
    assert [(r.index, r.custom_id, r.attempts) for r in results] == [(0, None, 1), (1, "t", 2), (2, None, 1)]
    assert [r.response.output_text for r in results] == ["plain a", "sums: 3; 7", "plain b"]
    assert [r.tool_run is not None for r in results] == [False, True, False]
    replies = [results[0].response, *results[1].tool_run.responses, results[2].response]
    given = sum(r.usage.input_tokens for r in replies)
    made = sum(r.usage.output_tokens for r in replies)
    stats = results.stats
    assert (stats.requests, stats.prompt_tokens, stats.completion_tokens) == (4, given, made) and given > 0
    assert stats.spent_usd == pytest.approx((given * 1.0 + made * 2.0) / 1e6)


def test_jsonl_responses_lines_run_their_loop_and_carry_the_conversation(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/responses",
                                       "body": {"model": "m", "input": f"sum {i}"}}) + "\n" for i in range(3)))
    with FakeServer(reply=sums()) as server, Client(api_key=server.api_key, base_url=server.url) as client:
        report = run_jsonl(client, src, out, tools=[add], max_turns=3, check_quota=False)
        assert [r.path for r in server.requests] == ["/v1/responses"] * 6
    assert (report.succeeded, report.failed) == (3, 0)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["custom_id"] for line in lines] == ["r0", "r1", "r2"]
    for i, line in enumerate(lines):
        assert line["response"]["output"][0]["content"][0]["text"] == "sums: 3; 7"
        assert [m.get("type") for m in line["transcript"]] == [None, "function_call", "function_call",
                                                              "function_call_output", "function_call_output",
                                                              "message"]
        assert line["transcript"][0] == {"role": "user", "content": f"sum {i}"}
        assert [(c["name"], c["arguments"], c["result"], c["turn"]) for c in line["tool_calls"]] == [
            ("add", '{"a":1,"b":2}', "3", 1), ("add", '{"a":3,"b":4}', "7", 1)]


def test_on_a_chat_only_server_the_batch_pays_one_404_and_every_turn_is_bridged(kind: str) -> None:
    with FakeServer(reply=sums()) as server:
        server.on("POST", "/responses", lambda request: Response(404, {"error": {
            "message": "Not Found", "type": "invalid_request_error", "code": None, "param": None}}))
        results = batch(kind, server, ["sum 0", "sum 1", "sum 2"], tools=[add], concurrency=1)
        paths = [r.path for r in sent(server)]
        last = [r.body for r in sent(server)][-1]
    assert paths == ["/v1/responses"] + ["/v1/chat/completions"] * 6
    assert [r.response.output_text for r in results] == ["sums: 3; 7"] * 3
    assert [m["role"] for m in last["messages"]] == ["user", "assistant", "tool", "tool"]
    assert [m.get("content") for m in last["messages"][2:]] == ["3", "7"]
    assert last["tools"] == [function_tool(add)]


def test_a_429_or_a_500_on_a_later_turn_is_retried_and_the_agent_goes_on(kind: str) -> None:
    """``sum 1``'s second turn gets a 429, ``sum 2``'s a 500, once each: each is sent again with the same body and
    idempotency key; every item finishes, and the server saw exactly 6 turns + 2 failed attempts."""
    failed: dict[str, Response] = {"sum 1": Response(429, {"error": {
        "message": "Rate limit reached for requests.", "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}}),
        "sum 2": Response(500, {"error": {"message": "boom", "type": "server_error"}})}

    def fail_second_turn_once(request: Any) -> Response | None:
        text = prompt(request.body)
        if text in failed and len(request.body["input"]) > 1:
            return failed.pop(text)
        return None  # the script's reply

    with FakeServer(reply=sums()) as server:
        server.on("POST", "/responses", fail_second_turn_once)
        results = batch(kind, server, ["sum 0", "sum 1", "sum 2"], tools=[add], concurrency=3)
        turns = by_prompt(server)
        assert len(sent(server)) == 8
    assert [r.attempts for r in results] == [2, 3, 3]
    assert [r.response.output_text for r in results] == ["sums: 3; 7"] * 3
    for text in ("sum 1", "sum 2"):
        first, refused, again = turns[text]
        assert refused.body == again.body and len(again.body["input"]) == 5
        assert refused.headers["idempotency-key"] == again.headers["idempotency-key"] \
            == f"{first.headers['idempotency-key']}-turn2"
    stats = results.stats
    assert (stats.requests, stats.retries, stats.rate_limited, stats.succeeded) == (8, 2, 1, 3)


def test_an_item_with_tools_of_a_format_without_tool_turns_fails_before_any_request() -> None:
    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.wire(EMBEDDINGS).batch([{"input": "x", "tools": [add]}, {"input": "y"}], model="m",
                                                check_quota=False)
        assert [r.path for r in server.requests] == ["/v1/embeddings"]  # the other item only
    first, second = results
    assert isinstance(first.error, InvalidRequestError) and first.attempts == 0
    assert str(first.error) == "the embeddings format has no tool calls to run."
    assert second.ok and second.attempts == 1

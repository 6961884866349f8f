"""Agents in a batch: parsed_arguments per item, a tool loop per item through the batch's admission, one result
per input in order, transcripts on JSONL lines, and 200 agents against 20 % transient faults."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from holysheep import AsyncClient, Client, InvalidRequestError, MaxTurnsError, pydantic_function_tool
from holysheep.batch import run_jsonl
from holysheep.testing import FakeServer, Fault, Script

from .conftest import call


class Lookup(BaseModel):
    """Look up a key."""

    key: str


def lookup(key: str) -> str:
    """Look up a key."""
    return f"value-of-{key}"


def agent_script() -> Script:
    """Every question ``q<i>`` calls lookup(key=<i>) first, then answers with the tool result."""
    return Script([{"match": "q", "replies": [{"tool_calls": [call("lookup", key="k")]}, "answer: {tool_results}"]}])


def chats(server: FakeServer) -> list[Any]:
    """The chat requests the server saw (the batch's quota check is left out)."""
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def client_for(server: FakeServer, **kwargs: Any) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0, **kwargs)


def test_pydantic_tools_give_parsed_arguments_per_item() -> None:
    script = Script([{"match": "q", "reply": {"tool_calls": [call("Lookup", key="abc")]}}])
    with FakeServer(reply=script) as server, client_for(server) as client:
        results = client.chat.completions.batch(["q1", "q2", "q3"], model="gpt-4.1",
                                                tools=[pydantic_function_tool(Lookup)])
    for result in results:
        assert result.ok, result.error
        args = result.response.choices[0].message.tool_calls[0].function.parsed_arguments
        assert args == Lookup(key="abc")


def test_agent_items_run_their_tool_loop_in_order() -> None:
    seen: list[str] = []

    def record(key: str) -> str:
        """Record a key."""
        seen.append(key)
        return key.upper()

    script = Script([{"match": "q", "replies": [{"tool_calls": [call("record", key="x"), call("record", key="y")]},
                                                "got {tool_results}"]}])
    with FakeServer(reply=script, latency=0.02) as server, client_for(server) as client:
        results = client.chat.completions.batch([{"custom_id": f"c{i}", "messages": [
            {"role": "user", "content": f"q{i}"}]} for i in range(5)], model="gpt-4.1", tools=[record],
            max_turns=3, concurrency=2)
        assert server.max_in_flight == 2  # every turn's request holds one of the batch's 2 slots, no more
        assert len(chats(server)) == 10
    assert [r.custom_id for r in results] == [f"c{i}" for i in range(5)]
    for result in results:
        assert result.ok and result.attempts == 2
        assert result.response.choices[0].message.content == "got X; Y"
        assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "tool", "assistant"]
        assert [c.output for c in result.tool_calls] == ["X", "Y"]
        assert result.tool_run.usage.total_tokens == sum(c.usage.total_tokens for c in result.tool_run.completions)
    assert sorted(seen) == ["x", "y"] * 5 or Counter(seen) == {"x": 5, "y": 5}
    assert results.stats.requests == 10


def test_each_turn_has_its_own_idempotency_key() -> None:
    with FakeServer(reply=agent_script()) as server, client_for(server) as client:
        client.chat.completions.batch(["q0"], model="gpt-4.1", tools=[lookup])
        keys = [r.headers.get("idempotency-key") for r in chats(server)]
    assert keys[0] and keys[1] == f"{keys[0]}-turn2"


def test_max_turns_ends_the_item_with_its_transcript() -> None:
    script = Script([{"match": "q", "reply": {"tool_calls": [call("lookup", key="k")]}}])  # never answers
    with FakeServer(reply=script) as server, client_for(server) as client:
        results = client.chat.completions.batch(["q0", "q1"], model="gpt-4.1", tools=[lookup], max_turns=2)
    for result in results:
        assert isinstance(result.error, MaxTurnsError)
        assert [m["role"] for m in result.error.messages] == ["user", "assistant", "tool", "assistant"]
    assert results.stats.requests == 4


def test_bad_tool_options_fail_before_any_request() -> None:
    def untyped(a):  # type: ignore[no-untyped-def]
        """No hints."""

    with FakeServer() as server, client_for(server) as client:
        with pytest.raises(InvalidRequestError, match="max_turns must be an integer >= 1"):
            client.chat.completions.batch(["q"], model="m", tools=[lookup], max_turns=0)
        with pytest.raises(InvalidRequestError, match="has no type hint"):
            client.chat.completions.batch(["q"], model="m", tools=[untyped])
        assert server.requests == []


def test_jsonl_lines_carry_the_transcript(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"custom_id": f"a{i}", "messages": [{"role": "user", "content": f"q{i}"}]})
                           + "\n" for i in range(3)))
    with FakeServer(reply=agent_script()) as server, client_for(server) as client:
        report = run_jsonl(client, src, out, model="gpt-4.1", tools=[lookup], max_turns=4)
    assert report.succeeded == 3
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["custom_id"] for line in lines] == ["a0", "a1", "a2"]
    for line in lines:
        assert line["response"]["choices"][0]["message"]["content"] == "answer: value-of-k"
        assert [m["role"] for m in line["transcript"]] == ["user", "assistant", "tool", "assistant"]
        assert line["transcript"][2]["content"] == "value-of-k"
        record = line["tool_calls"][0]
        assert (record["name"], record["arguments"], record["result"], record["error"], record["turn"]) == (
            "lookup", '{"key":"k"}', "value-of-k", None, 1)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_200_agents_with_20_percent_transient_faults(kind: str) -> None:
    """Every agent finishes; every round trip went through admission (at most `concurrency` in flight) and the
    server saw exactly 2 successful requests per agent plus one per injected fault."""
    mix = {Fault.status(500): 1, Fault.status(503): 1, Fault.status(502): 1}
    calls: list[str] = []

    async def alookup(key: str) -> str:
        """Look up a key (async)."""
        calls.append(key)
        await asyncio.sleep(0)
        return f"value-of-{key}"

    items = [f"q{i}" for i in range(200)]
    with FakeServer(reply=agent_script(), fault_rate=0.2, fault_mix=mix, seed=7) as server:
        tool = alookup if kind == "async" else lookup
        options: dict[str, Any] = {"model": "gpt-4.1", "tools": [tool], "max_turns": 4, "concurrency": 8,
                                   "max_retries": 20, "retry_budget": None, "rpm": None, "tpm": None}
        tool_name = tool.__name__
        script = Script([{"match": "q", "replies": [{"tool_calls": [call(tool_name, key="k")]},
                                                    "answer: {tool_results}"]}])
        server.reply = script
        if kind == "sync":
            with client_for(server) as client:
                results = client.chat.completions.batch(items, **options)
        else:
            async def go() -> Any:
                async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as c:
                    return await c.chat.completions.batch(items, **options)

            results = asyncio.run(go())
        recorded = chats(server)
        assert server.max_in_flight <= 8
    assert len(results) == 200 and all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    assert [r.index for r in results] == list(range(200))
    assert all(r.response.choices[0].message.content == "answer: value-of-k" for r in results)
    faults = sum(1 for r in recorded if r.fault is not None)
    successes = sum(1 for r in recorded if r.status == 200)
    assert successes == 400  # two turns per agent, each sent until it got through
    assert faults > 40 and len(recorded) == 400 + faults
    assert results.stats.requests == len(recorded) and results.stats.retries == faults
    assert sum(r.attempts for r in results) == len(recorded)
    if kind == "async":
        assert len(calls) == 200


def test_sync_batch_reads_tools_given_as_a_generator_once() -> None:
    """The sync batch checks its options, then runs them in a worker thread: a generator of tools must not be
    read empty the second time (every item would go out with ``tools=[]`` and no tool loop)."""
    with FakeServer(reply=agent_script()) as server, client_for(server) as client:
        results = client.chat.completions.batch(["q0", "q1"], model="gpt-4.1", tools=(t for t in [lookup]))
        bodies = [r.body for r in chats(server)]
    assert [r.response.choices[0].message.content for r in results] == ["answer: value-of-k"] * 2
    assert len(bodies) == 4 and all([t["function"]["name"] for t in b["tools"]] == ["lookup"] for b in bodies)

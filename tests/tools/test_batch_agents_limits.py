"""Agents in a batch under the batch's rate limits, on an injected clock: every turn of every agent is admitted
through the same RPM/TPM buckets and the same pause gate as any other request, on exact schedules.

The engine takes ``clock``/``sleep``; the clock here moves only when something sleeps on it (a bucket's wait,
the pause gate's naps), so each request's send time is exactly where the limiter put it, whatever the real
round trips took. A wrapper around the client's ``Sender`` records each attempt as it goes out.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from holysheep import AsyncClient
from holysheep._core.call import Outcome
from holysheep._engine.iterator import BatchIterator
from holysheep._engine.options import split_params
from holysheep._engine.results import BatchResult, BatchStats
from holysheep.testing import FakeServer, RecordedRequest, Response, Script

from .._fakes import FakeClock, RecordingSender, Sent
from .conftest import call


@dataclass(eq=False)
class TurnSent(Sent):
    """``Sent`` with the agent (its user message) and its turn (0-based), read when the attempt went out."""

    agent: str = field(init=False)
    turn: int = field(init=False)

    def __post_init__(self) -> None:
        messages = self.body["messages"]
        self.agent = messages[0]["content"]
        self.turn = sum(m["role"] == "assistant" for m in messages)


async def run_batch(server: FakeServer, items: Sequence[Any], clock: FakeClock, *,
                    on_outcome: Callable[[TurnSent, Outcome], None] | None = None, **params: Any
                    ) -> tuple[list[BatchResult], BatchStats, RecordingSender[TurnSent], BatchIterator]:
    """``batch(items, **params)`` on an AsyncClient, with the engine on ``clock``: results in input order."""
    options, _, defaults = split_params({"model": "gpt-4.1", "check_quota": False, **params})
    async with AsyncClient(api_key=server.api_key, base_url=server.url, initial_retry_delay=0) as client:
        sender = RecordingSender(client.sender(), clock, record=TurnSent, on_outcome=on_outcome)
        sender.reserve(options.concurrency)
        it = BatchIterator(sender, items, defaults=defaults, options=options, total=len(items), clock=clock,
                           sleep=clock.sleep)
        async with it:
            results = [r async for r in it]
    return sorted(results, key=lambda r: r.index), it.stats, sender, it


def chats(server: FakeServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def most_in_window(times: Sequence[float], weights: Sequence[float], window: float = 60.0) -> float:
    """The largest total weight sent within any half-open window ``[t, t + window)``."""
    return max(sum(w for s, w in zip(times, weights, strict=True) if t <= s < t + window - 1e-9) for t in times)


def lookup(key: str) -> str:
    """Look up a key."""
    return f"value-of-{key}"


async def test_rpm_admits_every_turn_of_every_agent_on_the_bucket_schedule() -> None:
    """8 agents x 5 turns at rpm=30 (one request every 2 s, a burst of 1): the server sees exactly 40 chat
    requests, sent at 0, 2, 4, ..., 78 s on the engine's clock, so no 60-second window holds more than 30,
    whichever agent's turn came next; every agent's result and transcript is right, in input order."""
    agents, turns, rpm = 8, 5, 30
    replies: list[Any] = [{"tool_calls": [call("lookup", key=f"t{k}")]} for k in range(1, turns)]
    script = Script([{"match": "q", "replies": [*replies, "answer: {tool_results}"]}])
    clock = FakeClock()
    items = [{"custom_id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(agents)]
    with FakeServer(reply=script) as server:
        results, stats, sender, _ = await run_batch(server, items, clock, tools=[lookup], max_turns=turns,
                                                    concurrency=8, rpm=rpm, tpm=None)
        assert len(chats(server)) == agents * turns
    times = [s.at for s in sender.sent]
    assert times == pytest.approx([2.0 * k for k in range(agents * turns)], abs=1e-9)
    assert most_in_window(times, [1] * len(times)) == rpm
    for i in range(agents):  # each agent's turns went out in order, each once
        assert [s.turn for s in sender.sent if s.agent == f"q{i}"] == list(range(turns))
    assert [r.custom_id for r in results] == [f"c{i}" for i in range(agents)]
    for result in results:
        assert result.ok, result.error
        assert result.attempts == turns
        assert result.response.choices[0].message.content == "answer: value-of-t4"
        assert [m["role"] for m in result.messages] == ["user", *["assistant", "tool"] * (turns - 1), "assistant"]
        assert [c.output for c in result.tool_calls] == [f"value-of-t{k}" for k in range(1, turns)]
    assert stats.requests == agents * turns and stats.retries == 0


PAGE = "x" * 400  # 100 estimated tokens per tool result


def fetch(page: int) -> str:
    """Fetch a page."""
    return PAGE


def paging_agent(turns: int, usage: dict[int, int] | None = None) -> Callable[[RecordedRequest], dict[str, Any]]:
    """A server handler: fetch(page=k) for turns 0..turns-2, then an answer. No ``usage`` in the replies
    (but ``usage[turn]`` total tokens where given), so the TPM bucket keeps each request's estimate."""

    def reply(rec: RecordedRequest) -> dict[str, Any]:
        messages = rec.body["messages"]
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn < turns - 1:
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{turn}", "type": "function",
                 "function": {"name": "fetch", "arguments": json.dumps({"page": turn})}}]}
        else:
            message = {"role": "assistant", "content": f"read {turn} pages"}
        out = {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0, "model": rec.body["model"],
               "choices": [{"index": 0, "message": message,
                            "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}]}
        if usage is not None and turn in usage:
            out["usage"] = {"prompt_tokens": usage[turn] - 10, "completion_tokens": 10, "total_tokens": usage[turn]}
        return out

    return reply


def bucket_schedule(charges: Sequence[int], per_minute: float) -> list[float]:
    """When a token bucket (``per_minute``, a one-second burst, starting full) admits ``charges`` in order, on
    a clock that moves only while the bucket is waited for; a charge above the burst waits for a full bucket
    and goes into debt."""
    rate = per_minute / 60.0
    capacity = max(1.0, rate)
    level, now, times = capacity, 0.0, []
    for charge in charges:
        need = min(charge, capacity)
        if level < need:
            now += (need - level) / rate
            level = need
        level -= charge
        times.append(now)
    return times


async def test_tpm_charges_each_turn_its_own_growing_estimate() -> None:
    """8 agents x 3 turns at tpm=3000 (50 tokens/s, a burst of 50), max_tokens=50: every tool result adds
    400 characters (100 tokens), so turns 1, 2, 3 are estimated at 1+50, 101+50 and 201+50 tokens. The bucket
    is charged exactly that for every request (not the first turn's estimate again), the send times are the
    bucket's schedule for those charges in the order they went. No 60-second window takes more than 3000
    tokens plus the larger of the burst and one request (a request above the burst waits for a full bucket,
    then goes out and leaves the bucket in debt for the rest)."""
    agents, turns, tpm = 8, 3, 3000
    clock = FakeClock()
    items = [f"q{i}" for i in range(agents)]
    with FakeServer() as server:
        server.on("POST", "/chat/completions", paging_agent(turns))
        results, stats, sender, it = await run_batch(server, items, clock, tools=[fetch], max_turns=turns,
                                                     max_tokens=50, concurrency=4, rpm=None, tpm=tpm)
        assert len(chats(server)) == agents * turns
    charges = [{0: 51, 1: 151, 2: 251}[s.turn] for s in sender.sent]
    assert sorted(charges) == [51] * agents + [151] * agents + [251] * agents
    times = [s.at for s in sender.sent]
    assert times == pytest.approx(bucket_schedule(charges, tpm), abs=1e-6)
    assert times[-1] > 60  # the run spans more than one window
    assert most_in_window(times, charges) <= tpm + max(50, *charges)
    assert it.admission.estimator.samples == 0  # no usage came back: the charges were the estimates
    for i, result in enumerate(results):
        assert result.ok, result.error
        assert result.custom_id is None and result.index == i
        assert result.response.choices[0].message.content == f"read {turns - 1} pages"
        assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool",
                                                        "assistant"]
        assert [m["content"] for m in result.messages if m["role"] == "tool"] == [PAGE, PAGE]
    assert stats.requests == agents * turns


async def test_a_later_turns_usage_is_bounded_by_that_turns_request(caplog: pytest.LogCaptureFixture) -> None:
    """A reply's usage counts against the TPM bucket at most what its request could use. For an agent's third
    turn that is the third request (its JSON, 800 characters of tool results in it, plus max_tokens: about
    1,540), not the item's first one (about 366): 1,200 tokens, over four times the turn's 251-token estimate,
    are counted as they are, with no "more than its request could use" warning."""
    clock = FakeClock()
    with FakeServer() as server:
        server.on("POST", "/chat/completions", paging_agent(3, usage={2: 1200}))
        with caplog.at_level(logging.WARNING, logger="holysheep.batch"):
            results, stats, sender, it = await run_batch(server, ["q0"], clock, tools=[fetch], max_turns=3,
                                                         max_tokens=50, concurrency=1, rpm=None, tpm=3000)
    assert results[0].ok and [s.turn for s in sender.sent] == [0, 1, 2]
    assert "more than its request could use" not in caplog.text
    estimator = it.admission.estimator
    assert (estimator.samples, estimator.factor) == (1, 4.0)  # 1200 / 251, clamped at 4 (not 366 / 251)
    assert stats.tokens == 1200


async def test_a_429_on_a_later_turn_pauses_the_whole_batch_and_the_agent_goes_on() -> None:
    """4 agents; q1's second turn gets a 429 with Retry-After: 2. The other agents' tools finish only once
    that 429 is back, so their second turns are ready during the pause: none of them (nor q1's retry) is sent
    before 2.0 s on the engine's clock, all four go at exactly 2.0; q1 is not failed (3 attempts), the batch
    paused once for 2 s, and the server saw exactly 9 chat requests (8 turns + 1 rate-limited)."""
    released = asyncio.Event()
    limited: list[TurnSent] = []

    async def alookup(key: str) -> str:
        """Look up a key."""
        if key != "k1":
            await released.wait()  # the others' next turns wait until q1's 429 has paused the batch
        return f"value-of-{key}"

    def on_outcome(sent: TurnSent, outcome: Outcome) -> None:
        if sent.status == 429:
            limited.append(sent)
            released.set()

    fired: list[RecordedRequest] = []

    def rate_limit_q1_turn_2(rec: RecordedRequest) -> Response | None:
        messages = rec.body["messages"]
        if messages[0]["content"] == "q1" and messages[-1]["role"] == "tool" and not fired:
            fired.append(rec)
            return Response(429, {"error": {"message": "Rate limit reached for requests.",
                                            "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}},
                            {"retry-after": "2"})
        return None  # the script's reply

    script = Script([{"match": f"q{i}", "replies": [{"tool_calls": [call("alookup", key=f"k{i}")]},
                                                    "answer: {tool_results}"]} for i in range(4)])
    clock = FakeClock()
    with FakeServer(reply=script) as server:
        server.on("POST", "/chat/completions", rate_limit_q1_turn_2)
        results, stats, sender, _ = await run_batch(server, [f"q{i}" for i in range(4)], clock,
                                                    on_outcome=on_outcome, tools=[alookup], max_turns=3,
                                                    concurrency=4, rpm=None, tpm=None)
        recorded = chats(server)
    assert len(recorded) == 9 and [r.status for r in recorded].count(429) == 1
    assert len(limited) == 1 and (limited[0].agent, limited[0].turn, limited[0].at) == ("q1", 1, 0.0)
    at = sender.sent.index(limited[0])
    before, after = sender.sent[:at + 1], sender.sent[at + 1:]
    assert sorted((s.agent, s.turn) for s in before) == [("q0", 0), ("q1", 0), ("q1", 1), ("q2", 0), ("q3", 0)]
    assert all(s.at == 0.0 for s in before)
    assert sorted((s.agent, s.turn) for s in after) == [("q0", 1), ("q1", 1), ("q2", 1), ("q3", 1)]
    assert [s.at for s in after] == pytest.approx([2.0] * 4, abs=1e-9)  # nothing went out during the pause
    assert [s.status for s in after] == [200] * 4
    for i, result in enumerate(results):
        assert result.ok, result.error
        assert result.attempts == (3 if i == 1 else 2)
        assert result.response.choices[0].message.content == f"answer: value-of-k{i}"
        assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert (stats.requests, stats.retries, stats.rate_limited) == (9, 1, 1)
    assert (stats.pauses, stats.paused_s) == (1, 2.0)

"""Tools are bounded: they run on the SDK's own threads (``tool_threads``), never the loop's default executor; a
call past ``tool_timeout`` becomes an error text for the model and is abandoned (its thread stops counting), so
a slow tool never holds up an agent whose tools are ready."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from holysheep import AsyncClient, Client, InvalidRequestError
from holysheep._core.tool_loop import PendingCall, RunTools
from holysheep._core.tools import tool_set
from holysheep._engine import tool_calls
from holysheep._engine.tool_pool import ToolPool, tool_pool
from holysheep.testing import FakeServer, Script
from holysheep.types.chat import FunctionCall, ToolCall

from .conftest import call, run_tools

TIMED_OUT = ("Error: the tool 'hang' did not finish within 0.05 s (tool_timeout) and was abandoned. Try again "
             "with a smaller request, or answer without it.")


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tool durations as the caller reads them: 0, 1, 2, ... in the test's thread (a tool thread reads -1)."""
    ticks = iter(range(1_000_000))
    main = threading.main_thread()
    monkeypatch.setattr(tool_calls, "clock",
                        lambda: float(next(ticks)) if threading.current_thread() is main else -1.0)


def test_a_hung_tool_times_out_into_an_error_text_for_the_model(kind: str) -> None:
    release = threading.Event()

    def hang(key: str) -> str:
        """Wait for the test."""
        release.wait(10)
        return "late"

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("hang", key="k")]}, "saw: {tool_results}"]}])
    try:
        with FakeServer(reply=script) as server:
            result = run_tools(kind, server, messages=[{"role": "user", "content": "go"}], tools=[hang],
                               tool_timeout=0.05)
            assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 2
    finally:
        release.set()
    assert result.messages[2] == {"role": "tool", "tool_call_id": result.tool_calls[0].id, "content": TIMED_OUT}
    assert result.tool_calls[0].error == TIMED_OUT and result.tool_calls[0].output is None
    assert result.content == f"saw: {TIMED_OUT}"


def test_a_timed_out_call_is_abandoned_and_frees_its_thread(fake_clock: None) -> None:
    release = threading.Event()

    def hang(key: str) -> str:
        """Wait for the test."""
        release.wait(10)
        return "late"

    def instant(key: str) -> str:
        """Answer at once."""
        return key

    tools = tool_set([hang, instant])
    pool = ToolPool(1)  # one thread: the hung call holds it until it is abandoned

    def pending(name: str, i: int) -> PendingCall:
        tc = ToolCall(id=f"c{i}", function=FunctionCall(name=name, arguments=f'{{"key": "v{i}"}}'))
        tool = tools.typed(name)
        assert tool is not None
        return PendingCall(tc, tool, tool.validate_arguments(tc.function.arguments))

    try:
        first = tool_calls.run_turn(RunTools([pending("hang", 0)], 1, 0.05), pool=pool)
        assert [o.result for o in first] == [TIMED_OUT] and first[0].duration_s == 1.0  # from the turn's start
        assert (pool.counted, pool.abandoned) == (0, 1)  # the hung thread no longer counts
        second = tool_calls.run_turn(RunTools([pending("instant", 1)], 2, 0.05), pool=pool)
        assert [o.result for o in second] == ["v1"]  # ran on a new thread while the first still hangs
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while pool.abandoned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.abandoned == 0  # the abandoned thread ended once its tool returned


def test_an_async_tool_is_cancelled_at_its_timeout() -> None:
    cancelled = threading.Event()

    async def hang(key: str) -> str:
        """Wait forever."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("hang", key="k")]}, "saw: {tool_results}"]}])
    with FakeServer(reply=script) as server:
        for kind in ("sync", "async"):
            cancelled.clear()
            result = run_tools(kind, server, messages=[{"role": "user", "content": "go"}], tools=[hang],
                               tool_timeout=0.05)
            assert result.tool_calls[0].error == TIMED_OUT
            assert cancelled.wait(5)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
def test_tool_timeout_is_checked_before_any_request(bad: object) -> None:
    def echo(key: str) -> str:
        """Echo."""
        return key

    with FakeServer() as server, Client(api_key=server.api_key, base_url=server.url) as client:
        with pytest.raises(InvalidRequestError, match="tool_timeout must be seconds > 0 or None"):
            client.chat.completions.run_tools(model="m", messages=[{"role": "user", "content": "x"}],
                                              tools=[echo], tool_timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequestError, match="tool_timeout must be seconds > 0 or None"):
            client.chat.completions.batch(["x"], model="m", tools=[echo], tool_timeout=bad)  # type: ignore[typeddict-item]
        assert server.requests == []
    with pytest.raises(InvalidRequestError, match="tool_threads must be an integer >= 1"):
        Client(api_key="k", base_url="http://127.0.0.1:9/v1", tool_threads=0)


def agents_script() -> Script:
    return Script([
        {"match": "slow", "replies": [{"tool_calls": [call("hang", key="k")]}, "slow: {tool_results}"]},
        {"match": "fast", "replies": [{"tool_calls": [call("instant", key="k")]}, "fast: {tool_results}"]},
    ])


@pytest.mark.parametrize("threads, timeout", [(None, None), (4, 0.2)])
def test_instant_agents_finish_while_six_tools_hang(threads: int | None, timeout: float | None) -> None:
    """20 agents, 6 of whose tools hang until the 14 others have their results. On the default pool nothing
    waits for a hung tool; on a pool of 4 the hung calls are abandoned at ``tool_timeout`` and free their
    threads. On the loop's default executor (min(32, cores + 4) threads: 6 here) the 14 would wait for the 6."""
    release = threading.Event()
    by_agents = threading.Event()  # the 14 were done before anything released the hung tools
    fast_done: list[str] = []

    def hang(key: str) -> str:
        """Wait for the test."""
        release.wait(10)
        return "late"

    def instant(key: str) -> str:
        """Answer at once."""
        return "now"

    def on_result(result: Any) -> None:
        if result.custom_id.startswith("fast"):
            fast_done.append(result.custom_id)
            if len(fast_done) == 14 and not release.is_set():
                by_agents.set()
                release.set()  # only now may the hung tools return

    items = [{"custom_id": f"slow{i}", "messages": [{"role": "user", "content": "slow"}]} for i in range(6)]
    items += [{"custom_id": f"fast{i}", "messages": [{"role": "user", "content": "fast"}]} for i in range(14)]
    kw: dict[str, Any] = {} if threads is None else {"tool_threads": threads}

    async def go(url: str, key: str) -> Any:
        async with AsyncClient(api_key=key, base_url=url, **kw) as client:
            return await client.chat.completions.batch(items, model="m", tools=[hang, instant], concurrency=20,
                                                       tool_timeout=timeout, on_result=on_result)

    watchdog = threading.Timer(8, release.set)  # a broken pool would hang the batch: fail, do not hang
    watchdog.start()
    try:
        with FakeServer(reply=agents_script()) as server:
            results = asyncio.run(go(server.url, server.api_key))
    finally:
        watchdog.cancel()
        release.set()
    assert by_agents.is_set() and len(fast_done) == 14 and all(r.ok for r in results)
    assert [r.response.choices[0].message.content for r in results[6:]] == ["fast: now"] * 14
    slow = [r.response.choices[0].message.content for r in results[:6]]
    if timeout is None:
        assert slow == ["slow: late"] * 6  # released once the 14 were done
    else:  # the 4 that held the threads were given up; the 2 queued behind them ran once those were abandoned
        gave_up = f"slow: {TIMED_OUT.replace('0.05 s', '0.2 s')}"
        assert slow.count(gave_up) >= 4 and set(slow) <= {gave_up, "slow: late"}
    assert tool_pool(threads or 64).counted <= (threads or 64)


def test_tools_never_run_on_the_loops_default_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[str] = []

    def instant(key: str) -> str:
        """Answer at once."""
        used.append(threading.current_thread().name)
        return "now"

    async def go(url: str, key: str) -> Any:
        loop = asyncio.get_running_loop()

        def refuse(*args: Any) -> Any:
            raise AssertionError("a tool ran on the loop's default executor")

        monkeypatch.setattr(loop, "run_in_executor", refuse)
        async with AsyncClient(api_key=key, base_url=url) as client:
            return await client.chat.completions.run_tools(
                model="m", messages=[{"role": "user", "content": "fast"}], tools=[instant])

    with FakeServer(reply=agents_script()) as server:
        result = asyncio.run(go(server.url, server.api_key))
    assert result.content == "fast: now" and used == ["holysheep-tool"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_hooks_hear_one_end_with_a_timeout_error(kind: str) -> None:
    from holysheep import Hooks

    release = threading.Event()
    ends: list[Any] = []

    class Recorder(Hooks):
        def on_tool_end(self, event: Any) -> None:
            ends.append(event.error)

    def hang(key: str) -> str:
        """Wait for the test."""
        release.wait(10)
        return "late"

    script = Script([{"match": "go", "replies": [{"tool_calls": [call("hang", key="k")]}, "saw: {tool_results}"]}])
    messages = [{"role": "user", "content": "go"}]
    with FakeServer(reply=script) as server:
        if kind == "sync":
            with Client(api_key=server.api_key, base_url=server.url, hooks=[Recorder()]) as client:
                client.chat.completions.run_tools(model="m", messages=messages, tools=[hang], tool_timeout=0.05)
        else:
            async def go() -> None:
                async with AsyncClient(api_key=server.api_key, base_url=server.url, hooks=[Recorder()]) as client:
                    await client.chat.completions.run_tools(model="m", messages=messages, tools=[hang],
                                                            tool_timeout=0.05)

            asyncio.run(go())
    release.set()
    time.sleep(0.05)  # the abandoned call returns now: it must not be reported a second time
    assert len(ends) == 1 and isinstance(ends[0], TimeoutError) and str(ends[0]) == TIMED_OUT


def test_two_calls_and_one_idle_thread_run_at_once() -> None:
    """A pool with one idle thread left by an earlier call: two calls submitted together each get a thread.
    Before, the second submit notified the same idle thread again (it still counted as idle until it ran), no
    thread was started, and the second call waited for the first: parallel tool calls ran one after the other
    whenever a previous turn had left exactly one idle thread (the order-dependent failure of
    test_two_parallel_calls_overlap_sync)."""
    import threading

    from holysheep._engine.tool_pool import ToolPool

    pool = ToolPool(4)
    assert pool.submit(lambda: "warm").result(timeout=5) == "warm"
    for _ in range(500):  # until that thread waits for work (a fixed state, not a time band)
        with pool._cond:
            if pool._idle == 1:
                break
        threading.Event().wait(0.01)
    barrier = threading.Barrier(2, timeout=5)
    first, second = pool.submit(barrier.wait), pool.submit(barrier.wait)
    assert sorted([first.result(timeout=10), second.result(timeout=10)]) == [0, 1]  # both were waiting at once
    assert pool.counted == 2

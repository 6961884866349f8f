"""Streams against a real local server (FakeServer): timing, cuts, stalls and connection hygiene."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import APITimeoutError, AsyncClient, Client, StreamInterruptedError
from holysheep.testing import FakeServer, Fault

MSG = [{"role": "user", "content": "one two three four five six"}]


def _busy(client: Client | AsyncClient) -> int:
    busy: int = client._backend.in_use()
    return busy


def test_metrics_on_the_real_clock() -> None:
    """The default clock (``time.perf_counter``) wired end to end against a real server: every figure is there,
    positive and in order. Exact values are asserted on an injected clock (``test_stream_clock.py``)."""
    with FakeServer(stream_chunk_delay=0.001) as server, \
            Client(api_key=server.api_key, base_url=server.url) as client:
        with client.chat.completions.create(model="m", messages=MSG, stream=True) as stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        m = stream.metrics
        final = stream.get_final_completion()
    assert text.split() == MSG[0]["content"].split()
    assert m.completion_tokens == 6 and m.time_to_first_reasoning_s is None
    assert m.ttft_s is not None and m.itl_mean_s is not None and m.itl_p50_s is not None and m.itl_p95_s is not None
    assert m.total_s is not None and m.tokens_per_s is not None
    assert 0 < m.ttft_s == m.time_to_first_content_s < m.total_s == final.elapsed_s
    assert 0 < m.itl_p50_s <= m.itl_p95_s and m.itl_mean_s > 0 and m.tokens_per_s == 6 / m.total_s


def test_async_stream_and_metrics() -> None:
    async def main() -> None:
        with FakeServer(stream_chunk_delay=0.02) as server:
            async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                stream = await client.chat.completions.create(model="m", messages=MSG, stream=True,
                                                              stream_options={"include_usage": True})
                async with stream:
                    final = await stream.get_final_completion()
                assert final.choices[0].message.content is not None
                assert final.choices[0].message.content.split() == MSG[0]["content"].split()
                assert final.usage is not None and final.usage.completion_tokens == 6
                m = stream.metrics
                assert m.ttft_s is not None and m.total_s is not None and 0 < m.ttft_s < m.total_s
                assert m.itl_mean_s is not None and m.itl_mean_s > 0
                assert _busy(client) == 0

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_stream_cut_midway_gives_partial_text(kind: str) -> None:
    with FakeServer(faults=[Fault.stream_cut(after_events=3)]) as server:
        if kind == "sync":
            with Client(api_key=server.api_key, base_url=server.url) as client, \
                    pytest.raises(StreamInterruptedError) as info:
                for _ in client.chat.completions.create(model="m", messages=MSG, stream=True):
                    pass
        else:
            async def main() -> None:
                async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:  # noqa: SIM117
                    async with await client.chat.completions.create(model="m", messages=MSG, stream=True) as s:
                        async for _ in s:
                            pass

            with pytest.raises(StreamInterruptedError) as info:
                asyncio.run(main())
    assert info.value.partial_text.strip() != ""
    assert MSG[0]["content"].startswith(info.value.partial_text.strip())
    assert len(server.requests) == 1  # never silently retried after output was seen


def test_stall_hits_idle_timeout() -> None:
    """The server reads the request and answers nothing for 5 s (then it would answer normally: a client that
    waited it out would get a good stream, so the stall is also the hang guard, 16x the limit). The 0.3 s idle
    limit ends the wait with a timeout; the one request was never answered and not retried."""
    with FakeServer(stream_chunk_delay=0.0) as server:
        server.set_faults([Fault.stall(seconds=5)])
        timed_out = r"^Request timed out \(POST http://127\.0\.0\.1:\d+/v1/chat/completions\): timed out\."
        with Client(api_key=server.api_key, base_url=server.url, max_retries=0, stream_idle_timeout=0.3) as c, \
                pytest.raises(APITimeoutError, match=timed_out) as info:
            c.chat.completions.create(model="m", messages=MSG, stream=True)
        assert type(info.value) is APITimeoutError
        assert [(r.path, r.status, r.fault) for r in server.requests] == [
            ("/v1/chat/completions", None, Fault.stall(seconds=5))]


def test_break_leaves_no_open_connection() -> None:
    with FakeServer(stream_chunk_delay=0.01) as server, \
            Client(api_key=server.api_key, base_url=server.url) as client:
        for _ in range(3):
            with client.chat.completions.create(model="m", messages=MSG, stream=True) as stream:
                for _chunk in stream:
                    break
            assert stream.response.is_closed
        assert _busy(client) == 0
        for _ in range(3):  # unmanaged: the loop variable is dropped, and the generator closes it
            for _chunk in client.chat.completions.create(model="m", messages=MSG, stream=True):
                break
        assert _busy(client) == 0
        resp = client.chat.completions.create(model="m", messages=MSG)  # pool still healthy
        assert resp.choices[0].message.content is not None

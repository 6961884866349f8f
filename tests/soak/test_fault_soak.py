"""Fault soak: 5,000 batch prompts against FakeServer with 20 % injected faults (marker ``soak``).

Checks that every prompt ends as exactly one successful result (transient faults lose nothing), the
successes are correct (the server echoes the
prompt), failures are typed errors, nothing is lost or duplicated, attempts stay within
max_retries + 1, and connections close. Half of the prompts are streamed (through create(stream=True))
so that cut streams are part of the mix.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from holysheep import AsyncClient, HolySheepError, StreamInterruptedError
from holysheep.testing import FakeServer, Fault

pytestmark = pytest.mark.soak

MIX = {
    Fault.status(429, retry_after=0.02): 3.0,
    Fault.status(500): 2.0,
    Fault.status(503): 2.0,
    Fault.reset(): 1.0,
    Fault.stall(seconds=3.0): 0.5,
    Fault.malformed_json(): 1.0,
    Fault.stream_cut(after_events=1): 1.0,
}
N = 5000
MAX_RETRIES = 8  # for the create() streams below; the batch soak runs the batch's own policy


def test_batch_soak_with_faults() -> None:
    prompts = [f"prompt number {i} about sheep" for i in range(N)]

    async def main(server: FakeServer) -> None:
        # Default transport, the default retry budget (a pace: retries over it wait, never refused) and the
        # batch's own retry policy (no max_retries anywhere: issue 25); short delays keep the soak short.
        async with AsyncClient(api_key=server.api_key, base_url=server.url, timeout=1.0,
                               initial_retry_delay=0.01, max_retry_delay=0.05) as client:
            start = time.perf_counter()
            results = await client.chat.completions.batch(
                [{"messages": [{"role": "user", "content": p}], "custom_id": f"id-{i}"}
                 for i, p in enumerate(prompts)],
                model="deepseek-v3.2", concurrency=64, check_quota=False)
            elapsed = time.perf_counter() - start
        assert elapsed < 110
        assert len(results) == N
        assert [r.custom_id for r in results] == [f"id-{i}" for i in range(N)]  # order kept, none lost
        kinds: Counter[str] = Counter()
        for i, r in enumerate(results):
            assert r.index == i
            assert r.attempts >= 1
            if r.ok:
                assert r.error is None and r.response is not None
                assert r.response.choices[0].message.content == prompts[i]
            else:
                assert r.response is None and isinstance(r.error, HolySheepError)
                kinds[type(r.error).__name__] += 1
        ok = sum(r.ok for r in results)
        assert ok == N, (ok, kinds, results.summary())  # transient faults lose nothing
        chat = [q for q in server.requests if q.path.endswith("/chat/completions")]
        assert len(chat) == sum(r.attempts for r in results)  # every attempt is accounted for
        faults = Counter(q.fault for q in chat if q.fault)
        assert len(faults) >= 6, faults  # the whole mix was exercised

    with FakeServer(fault_rate=0.2, fault_mix=MIX, seed=11) as server:
        asyncio.run(main(server))
        assert server.wait_idle(10)
        deadline = time.time() + 10
        while server.open_connections and time.time() < deadline:
            time.sleep(0.05)
        assert server.open_connections == 0


def test_stream_soak_no_silent_retry_after_output() -> None:
    """Streams cut mid-way raise with their partial text; failures before the first event are retried."""
    async def main(server: FakeServer) -> Counter[str]:
        outcomes: Counter[str] = Counter()
        sem = asyncio.Semaphore(32)
        async with AsyncClient(api_key=server.api_key, base_url=server.url, timeout=1.0, max_retries=MAX_RETRIES,
                               initial_retry_delay=0.01, max_retry_delay=0.05) as client:
            async def one(i: int) -> None:
                prompt = f"stream {i} counts the sheep"
                async with sem:
                    try:
                        s = await client.chat.completions.create(
                            model="m", messages=[{"role": "user", "content": prompt}], stream=True)
                        async with s:
                            final = await s.get_final_completion()
                        assert final.choices[0].message.content == prompt
                        outcomes["ok"] += 1
                    except StreamInterruptedError as e:
                        assert prompt.startswith(e.partial_text)
                        outcomes["interrupted"] += 1
                    except HolySheepError as e:
                        outcomes[type(e).__name__] += 1
            await asyncio.gather(*(one(i) for i in range(600)))
        return outcomes

    with FakeServer(fault_rate=0.2, fault_mix=MIX, seed=5) as server:
        outcomes = asyncio.run(main(server))
        assert server.wait_idle(10)
    assert sum(outcomes.values()) == 600
    assert outcomes["ok"] >= 480 and outcomes["interrupted"] >= 5, outcomes

"""Async batch: 200 prompts with bounded concurrency, a request-rate limit and injected faults.

Offline, an in-process FakeServer answers in 20 ms and fails 10 % of requests (429 with Retry-After, 500,
503, resets, ...); every prompt still ends with exactly one result. With ``HOLYSHEEP_BASE_URL`` set, the
batch goes to that server.

    python examples/async_batch.py
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a flaky local FakeServer that echoes the prompt."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None
        return
    from holysheep.testing import FakeServer

    with FakeServer(latency=0.02, fault_rate=0.1, seed=7) as server:
        yield server.url, server.api_key


async def run(base_url: str | None, api_key: str | None) -> None:
    # --8<-- [start:main]
    from holysheep import AsyncClient

    prompts = [f"Label item {i}: positive or negative?" for i in range(200)]
    async with AsyncClient(base_url=base_url, api_key=api_key, initial_retry_delay=0.05) as client:
        results = await client.chat.completions.batch(
            prompts,
            model="deepseek-v3.2",
            max_tokens=16,
            concurrency=32,     # never more than 32 requests in flight
            rpm=6000,           # requests per minute (default "auto": the limits the server announces)
        )
        assert len(results) == len(prompts)  # exactly one result per prompt, in input order
        print(results.summary())
        for r in results.failed:  # items whose retries ran out keep their typed error
            print("failed:", r.index, type(r.error).__name__, r.attempts, "attempts")

        # Results as they complete (each carries its input index); reads the input lazily.
        async with client.chat.completions.batch_iter(prompts[:20], model="deepseek-v3.2",
                                                      concurrency=8) as stream:
            async for r in stream:
                if r.ok and r.response is not None:
                    print(f"{r.index:>2} {r.latency_s:.3f} s {r.response.choices[0].message.content}")
    # --8<-- [end:main]


def main() -> None:
    with endpoint() as (base_url, api_key):
        asyncio.run(run(base_url, api_key))


if __name__ == "__main__":
    main()

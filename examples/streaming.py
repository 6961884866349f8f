"""Streaming: print tokens as they arrive, then read the latency metrics and the folded completion.

Sync and async. Offline (an in-process FakeServer with 50 ms to the first token and 10 ms between tokens)
unless ``HOLYSHEEP_BASE_URL`` is set.

    python examples/streaming.py
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def endpoint() -> Iterator[tuple[str | None, str | None]]:
    """(base_url, api_key): from the environment, or a local FakeServer with known latencies."""
    if os.environ.get("HOLYSHEEP_BASE_URL"):
        yield None, None
        return
    from holysheep.testing import FakeServer

    reply = "Streaming sends each token as soon as the model produces it, so the first words show at once."
    with FakeServer(reply=reply, latency=0.05, stream_chunk_delay=0.01) as server:
        os.environ["HOLYSHEEP_BASE_URL"], os.environ["HOLYSHEEP_API_KEY"] = server.url, server.api_key
        try:
            yield server.url, server.api_key
        finally:
            del os.environ["HOLYSHEEP_BASE_URL"], os.environ["HOLYSHEEP_API_KEY"]


def sync_stream() -> None:
    # --8<-- [start:sync]
    from holysheep import Client

    with Client() as client:  # reads HOLYSHEEP_API_KEY (and HOLYSHEEP_BASE_URL, when set)
        with client.chat.completions.create(
            model="deepseek-v3.2",
            messages=[{"role": "user", "content": "Why stream?"}],
            stream=True,
            stream_options={"include_usage": True},
        ) as stream:
            for chunk in stream:
                if chunk.choices:  # the usage chunk at the end has no choices
                    print(chunk.choices[0].delta.content or "", end="", flush=True)
        print()
        m = stream.metrics
        print(f"TTFT {m.ttft_s or 0:.3f} s, ITL mean {m.itl_mean_s or 0:.4f} s / p95 {m.itl_p95_s or 0:.4f} s, "
              f"{m.completion_tokens} tokens in {m.total_s or 0:.3f} s ({m.tokens_per_s or 0:.0f} tokens/s)")
        final = stream.get_final_completion()  # the chunks folded into one ChatCompletion
        print(final.choices[0].finish_reason, final.usage.total_tokens if final.usage else None)
    # --8<-- [end:sync]


async def async_stream() -> None:
    # --8<-- [start:async]
    from holysheep import AsyncClient

    async with AsyncClient() as client:
        stream = await client.chat.completions.create(
            model="deepseek-v3.2", messages=[{"role": "user", "content": "Why stream?"}], stream=True)
        async with stream:
            async for chunk in stream:
                if chunk.choices:
                    print(chunk.choices[0].delta.content or "", end="", flush=True)
        print(f"\nasync TTFT {stream.metrics.ttft_s or 0:.3f} s")
    # --8<-- [end:async]


def main() -> None:
    with endpoint():
        sync_stream()
        asyncio.run(async_stream())


if __name__ == "__main__":
    main()

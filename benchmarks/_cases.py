"""The benchmark cases: each returns CPU µs per request for one client in one mode."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from _common import KEY, cpu_us_per_call

MESSAGES = [{"role": "user", "content": "Say something long."}]
PAYLOAD = {"model": "deepseek-v3.2", "messages": MESSAGES}


def _openai(base_url: str) -> Any:
    try:
        import openai
    except ImportError:
        return None
    return openai


# --------------------------------------------------------------------------- sync JSON
def sync_json(base_url: str, n: int) -> dict[str, float]:
    import holysheep

    out: dict[str, float] = {}
    with httpx.Client() as http:
        out["raw httpx.Client"] = cpu_us_per_call(
            lambda: http.post(f"{base_url}/chat/completions", json=PAYLOAD,
                              headers={"authorization": f"Bearer {KEY}"}).json(), n)
    with holysheep.Client(api_key=KEY, base_url=base_url) as hs:
        out["holysheep.Client"] = cpu_us_per_call(
            lambda: hs.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n)
    openai = _openai(base_url)
    if openai is not None:
        with openai.OpenAI(api_key=KEY, base_url=base_url) as oa:
            out["openai.OpenAI"] = cpu_us_per_call(
                lambda: oa.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n)
    return out


# --------------------------------------------------------------------------- stream
def stream(base_url: str, n: int) -> dict[str, float]:
    import holysheep

    out: dict[str, float] = {}
    body = {**PAYLOAD, "stream": True}
    with httpx.Client() as http:
        def raw() -> None:
            with http.stream("POST", f"{base_url}/chat/completions", json=body,
                             headers={"authorization": f"Bearer {KEY}"}) as r:
                for _ in r.iter_lines():
                    pass
        out["raw httpx.Client iter_lines"] = cpu_us_per_call(raw, n)
    with holysheep.Client(api_key=KEY, base_url=base_url) as hs:
        def ours() -> None:
            with hs.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, stream=True) as s:
                for _ in s:
                    pass
        out["holysheep.Client stream"] = cpu_us_per_call(ours, n)
    openai = _openai(base_url)
    if openai is not None:
        with openai.OpenAI(api_key=KEY, base_url=base_url) as oa:
            def theirs() -> None:
                for _ in oa.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, stream=True):
                    pass
            out["openai.OpenAI stream"] = cpu_us_per_call(theirs, n)
    return out


# --------------------------------------------------------------------------- async, 64 in flight
def async_inflight(base_url: str, n: int, concurrency: int = 64) -> dict[str, float]:
    import holysheep

    out: dict[str, float] = {}
    openai = _openai(base_url)

    out["holysheep.AsyncClient (httpx)"] = _measure_async(
        lambda: holysheep.AsyncClient(api_key=KEY, base_url=base_url),
        lambda c: c.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n, concurrency)
    out["holysheep.AsyncClient (aiohttp)"] = _measure_async(
        lambda: holysheep.AsyncClient(api_key=KEY, base_url=base_url, http_backend="aiohttp"),
        lambda c: c.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n, concurrency)
    out["raw httpx.AsyncClient"] = _measure_async(
        lambda: httpx.AsyncClient(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100)),
        lambda c: c.post(f"{base_url}/chat/completions", json=PAYLOAD), n, concurrency)
    if openai is not None:
        out["openai.AsyncOpenAI (httpx)"] = _measure_async(
            lambda: openai.AsyncOpenAI(api_key=KEY, base_url=base_url),
            lambda c: c.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n, concurrency)
        try:
            from openai import DefaultAioHttpClient
        except ImportError:
            DefaultAioHttpClient = None
        if DefaultAioHttpClient is not None:
            out["openai.AsyncOpenAI (aiohttp)"] = _measure_async(
                lambda: openai.AsyncOpenAI(api_key=KEY, base_url=base_url, http_client=DefaultAioHttpClient()),
                lambda c: c.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES), n, concurrency)
    return out


def _measure_async(factory: Callable[[], Any], call: Callable[[Any], Awaitable[Any]], n: int,
                   concurrency: int, rounds: int = 3) -> float:
    async def main() -> float:
        client = factory()
        sem = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with sem:
                await call(client)

        async def run_round() -> float:
            start = time.process_time()
            await asyncio.gather(*(one() for _ in range(n)))
            return (time.process_time() - start) / n * 1e6

        await run_round()
        samples = sorted([await run_round() for _ in range(rounds)])
        closer = getattr(client, "aclose", None) or getattr(client, "close", None)
        if closer is not None:
            res = closer()
            if asyncio.iscoroutine(res):
                await res
        return samples[len(samples) // 2]

    return asyncio.run(main())

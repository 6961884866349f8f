"""Client CPU per request, in process: the numbers to watch when cutting the SDK's per-request cost.

    python benchmarks/cpu_per_request.py [-n 2000] [--rounds 3] [--only NAME ...] [--profile NAME]

Each case is timed with ``time.process_time`` (this process only; the canned server runs in a
subprocess pinned to the other core), so the figures hold on a loaded, shared machine far better than
wall-clock ratios. Each figure is the minimum over ``--rounds`` (the least disturbed round on a shared
machine). ``--profile NAME`` runs that case once more under cProfile and prints the top
functions by own time.

Cases (µs of client CPU per request; streams per stream of 22 events):

- ``aiohttp_floor``: a bare ``aiohttp.ClientSession`` POST + read, 64 in flight.
- ``async_create``: ``AsyncClient().chat.completions.create`` (default aiohttp backend), 64 in flight.
- ``batch_item``: ``AsyncClient().chat.completions.batch``, concurrency 64, per item.
- ``httpx_floor``: a bare ``httpx.AsyncClient`` POST, 64 in flight.
- ``httpx_create``: ``AsyncClient(http_backend="httpx")`` create, 64 in flight.
- ``sync_stream`` / ``raw_stream``: ``Client`` stream vs raw ``httpx.Client`` ``iter_lines``, per stream.
- ``async_stream``: ``AsyncClient`` stream (aiohttp), 16 in flight, per stream.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from _common import KEY, MESSAGES, MODEL, PAYLOAD, canned_server, inflight, pin_client


def _async_case(open_: Callable[[], Any], body: Callable[[Any], Awaitable[None]], close: Callable[[Any], Any],
                n: int, rounds: int, profile: cProfile.Profile | None) -> float:
    async def main() -> float:
        client = open_()
        try:
            await body(client)  # warm-up: connections, imports, caches
            samples = []
            for _ in range(rounds):
                start = time.process_time()
                await body(client)
                samples.append((time.process_time() - start) / n * 1e6)
            if profile is not None:
                profile.enable()
                await body(client)
                profile.disable()
            return min(samples)
        finally:
            res = close(client)
            if asyncio.iscoroutine(res):
                await res

    return asyncio.run(main())


def cases(url: str, n: int, rounds: int) -> dict[str, Callable[[cProfile.Profile | None], float]]:
    import holysheep

    def aiohttp_floor(p: cProfile.Profile | None) -> float:
        import aiohttp

        def open_() -> Any:
            return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000))

        async def body(s: Any) -> None:
            async def one() -> None:
                async with s.post(f"{url}/chat/completions", json=PAYLOAD,
                                  headers={"authorization": f"Bearer {KEY}"}) as r:
                    await r.read()
            await inflight(one, n, 64)

        return _async_case(open_, body, lambda s: s.close(), n, rounds, p)

    def hs_async(backend: str) -> Callable[[cProfile.Profile | None], float]:
        def case(p: cProfile.Profile | None) -> float:
            async def body(c: Any) -> None:
                await inflight(lambda: c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=16),
                                n, 64)
            return _async_case(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url, http_backend=backend),
                               body, lambda c: c.aclose(), n, rounds, p)
        return case

    def batch_item(p: cProfile.Profile | None) -> float:
        async def body(c: Any) -> None:
            res = await c.chat.completions.batch([[{"role": "user", "content": f"prompt {i}"}] for i in range(n)],
                                                 model=MODEL, concurrency=64, max_tokens=16)
            assert len(res.responses) == n
        return _async_case(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url), body,
                           lambda c: c.aclose(), n, rounds, p)

    def httpx_floor(p: cProfile.Profile | None) -> float:
        async def body(c: Any) -> None:
            async def one() -> None:
                (await c.post(f"{url}/chat/completions", json=PAYLOAD)).read()
            await inflight(one, n, 64)
        return _async_case(lambda: httpx.AsyncClient(limits=httpx.Limits(max_connections=1000)), body,
                           lambda c: c.aclose(), n, rounds, p)

    ns = max(50, n // 10)

    def sync_case(open_: Callable[[], Any], fn: Callable[[Any], None], p: cProfile.Profile | None) -> float:
        with open_() as client:
            for _ in range(20):
                fn(client)
            samples = []
            for _ in range(rounds):
                start = time.process_time()
                for _ in range(ns):
                    fn(client)
                samples.append((time.process_time() - start) / ns * 1e6)
            if p is not None:
                p.enable()
                for _ in range(ns):
                    fn(client)
                p.disable()
        return min(samples)

    def raw_stream(p: cProfile.Profile | None) -> float:
        def fn(http: httpx.Client) -> None:
            with http.stream("POST", f"{url}/chat/completions", json={**PAYLOAD, "stream": True},
                             headers={"authorization": f"Bearer {KEY}"}) as r:
                for _ in r.iter_lines():
                    pass
        return sync_case(httpx.Client, fn, p)

    def sync_stream(p: cProfile.Profile | None) -> float:
        def fn(c: Any) -> None:
            with c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as s:
                for _ in s:
                    pass
        return sync_case(lambda: holysheep.Client(api_key=KEY, base_url=url), fn, p)

    def async_stream(p: cProfile.Profile | None) -> float:
        async def body(c: Any) -> None:
            async def one() -> None:
                async with await c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as s:
                    async for _ in s:
                        pass
            await inflight(one, ns, 16)
        return _async_case(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url), body,
                           lambda c: c.aclose(), ns, rounds, p)

    return {"aiohttp_floor": aiohttp_floor, "async_create": hs_async("aiohttp"), "batch_item": batch_item,
            "httpx_floor": httpx_floor, "httpx_create": hs_async("httpx"), "raw_stream": raw_stream,
            "sync_stream": sync_stream, "async_stream": async_stream}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="requests per round (streams: n/10)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reply-words", type=int, default=16)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--profile", default=None, help="cProfile this case; print the top 30 by own time")
    args = parser.parse_args()
    pin_client()
    with canned_server(0.0, args.reply_words) as url:
        table = cases(url, args.n, args.rounds)
        for name in args.only or list(table):
            prof = cProfile.Profile() if name == args.profile else None
            us = table[name](prof)
            print(f"{name:<16} {us:>8.0f} µs/request", flush=True)
            if prof is not None:
                pstats.Stats(prof).sort_stats("tottime").print_stats(30)
                prof.dump_stats(f"/tmp/transport_{name}.prof")


if __name__ == "__main__":
    main()

"""Client instructions per request, counted by valgrind: a CPU-cost figure that does not move with load.

    python benchmarks/instructions.py [-n 200] [--only CASE ...]

On a shared machine CPU-time ratios swing by 2x between runs; instruction counts do not. Each case runs
in a child interpreter under ``valgrind --tool=cachegrind --cache-sim=no`` twice, once with only the
warm-up and once with ``n`` more requests; the difference divided by ``n`` is the client's instructions
per request (the canned server runs outside valgrind). Needs ``valgrind`` on PATH. Compare versions
with ``PYTHONPATH=/path/to/other/src``. Cases are those of ``cpu_per_request.py``; streams are counted
per stream of 22 events.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from _common import KEY, MESSAGES, MODEL, PAYLOAD, canned_server, inflight, valgrind_instructions

WARMUP = 64
CASES = ("aiohttp_floor", "async_create", "batch_item", "httpx_floor", "httpx_create", "raw_stream",
         "sync_stream", "async_stream", "sync_lazy_body")


def child(case: str, n: int, url: str) -> None:
    import holysheep

    async def run_async(open_: Callable[[], Any], body: Callable[[Any, int], Awaitable[None]]) -> None:
        client = open_()
        try:
            await body(client, WARMUP)
            if n:
                await body(client, n)
        finally:
            res = client.aclose() if hasattr(client, "aclose") else client.close()
            if asyncio.iscoroutine(res):
                await res

    if case == "aiohttp_floor":
        import aiohttp

        async def floor(s: Any, k: int) -> None:
            async def one() -> None:
                async with s.post(f"{url}/chat/completions", json=PAYLOAD,
                                  headers={"authorization": f"Bearer {KEY}"}) as r:
                    await r.read()
            await inflight(one, k, 64)
        asyncio.run(run_async(lambda: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)), floor))
    elif case in ("async_create", "httpx_create"):
        backend = "aiohttp" if case == "async_create" else "httpx"

        async def create(c: Any, k: int) -> None:
            await inflight(lambda: c.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=16), k, 64)
        asyncio.run(run_async(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url, http_backend=backend),
                              create))
    elif case == "batch_item":
        async def batch(c: Any, k: int) -> None:
            res = await c.chat.completions.batch([[{"role": "user", "content": f"prompt {i}"}] for i in range(k)],
                                                 model=MODEL, concurrency=64, max_tokens=16)
            assert len(res.responses) == k
        asyncio.run(run_async(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url), batch))
    elif case == "httpx_floor":
        async def hfloor(c: Any, k: int) -> None:
            async def one() -> None:
                (await c.post(f"{url}/chat/completions", json=PAYLOAD)).read()
            await inflight(one, k, 64)
        asyncio.run(run_async(lambda: httpx.AsyncClient(limits=httpx.Limits(max_connections=1000)), hfloor))
    elif case == "async_stream":
        async def astream(c: Any, k: int) -> None:
            async def one() -> None:
                async with await c.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as s:
                    async for _ in s:
                        pass
            await inflight(one, k, 16)
        asyncio.run(run_async(lambda: holysheep.AsyncClient(api_key=KEY, base_url=url), astream))
    elif case == "raw_stream":
        with httpx.Client() as http:
            for _ in range(WARMUP // 4 + n):
                with http.stream("POST", f"{url}/chat/completions", json={**PAYLOAD, "stream": True},
                                 headers={"authorization": f"Bearer {KEY}"}) as r:
                    for _line in r.iter_lines():
                        pass
    elif case == "sync_stream":
        with holysheep.Client(api_key=KEY, base_url=url) as hs:
            for _ in range(WARMUP // 4 + n):
                with hs.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as st:
                    for _chunk in st:
                        pass
    elif case == "sync_lazy_body":  # with_streaming_response, no stream=True: the body read through iter_bytes
        with holysheep.Client(api_key=KEY, base_url=url) as hs:
            for _ in range(WARMUP // 4 + n):
                with hs.chat.completions.with_streaming_response.create(model=MODEL, messages=MESSAGES) as r:
                    for _piece in r.iter_bytes():
                        pass
    else:
        raise SystemExit(f"unknown case {case!r}; one of {', '.join(CASES)}")


def _count(case: str, n: int, url: str) -> int:
    return valgrind_instructions([sys.executable, __file__, "--child", case, str(n), url])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=200, help="requests (streams) counted after the warm-up")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--child", nargs=3, metavar=("CASE", "N", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with canned_server(0.0, 16) as url:
        for case in args.only or CASES:
            per = (_count(case, args.n, url) - _count(case, 0, url)) / args.n
            print(f"{case:<16} {per / 1000:>9.0f} k instructions/request", flush=True)


if __name__ == "__main__":
    main()

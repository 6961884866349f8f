"""Thousands in flight: a batch at concurrency N against the fastest plain aiohttp program, same server, same run.

    python benchmarks/inflight.py [--pairs 2] [--latency 8.0] [--quick] [--rss]

Shape (issue 25): 6,000 requests at 3,000 in flight, and 3,000 requests at 1,000 in flight, each answered after
``--latency`` seconds (default 8: ideal 16 s and 24 s). At 2 s (the issue's 1,500 requests/s) a 2-core machine
running client and server is the bottleneck: on 2026-12-07 the floor took 1.27x the ideal even at 4 s, and
1.16x at 8 s (issue 45: fewer requests per second, so the floor is near the ideal and the ratio sees the client).
The server runs ``--server-procs`` processes sharing the port (issue 45: one
process pinned to one core answered 1,500 requests/s no faster than in 8 s, twice the ideal, so the benchmark
measured the server, not the client); ``floor_vs_ideal`` says how close the floor came to the ideal, and a floor
beyond 1.2x the ideal is flagged ``server_bound`` (add processes, or pass a longer ``--latency`` for fewer
requests per second). The batch runs with its defaults but ``concurrency`` (rpm="auto" sees no
rate-limit headers from the canned server, so nothing paces it).

**The floor** (issue 37) is a worker pool: N asyncio tasks on one ``aiohttp.ClientSession`` (a connector of N
connections), each pulling the next request from one shared list until it is empty: no task per request,
no semaphore. ``gather`` is the program this benchmark compared against before (one task per request,
``asyncio.gather`` over all of them behind a semaphore of N), a slower program, kept beside it as what it is.
Each pair runs the batch and the floor back to back (then ``gather``), alternating which of batch and floor
goes first; the ratio is the median of the pairs' batch/floor ratios (``gather_ratio``: batch/gather). ``--rss``
adds the peak RSS of a batch at 10,000 in flight (a child process, ``ru_maxrss``). Results are printed as
JSON and merged into benchmarks/results.json under "inflight".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import KEY, canned_server, save_results

HERE = Path(__file__).resolve().parent
MODEL = "deepseek-v3.2"


def _prompts(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"benchmark prompt {i}"}] for i in range(n)]


def _raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))


async def batch(url: str, n: int, conc: int) -> tuple[float, int]:
    from holysheep import AsyncClient

    async with AsyncClient(api_key=KEY, base_url=url) as client:
        todo = _prompts(n)
        start = time.perf_counter()
        results = await client.chat.completions.batch(todo, model=MODEL, concurrency=conc, max_tokens=16,
                                                      check_quota=False)
        wall = time.perf_counter() - start
        assert sum(r.ok for r in results) == n, results.summary()
        return wall, results.stats.peak_in_flight


async def bare(url: str, n: int, conc: int) -> tuple[float, int]:
    import aiohttp

    todo = _prompts(n)
    peak = in_flight = 0
    connector = aiohttp.TCPConnector(limit=conc, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        sem = asyncio.Semaphore(conc)
        headers = {"authorization": f"Bearer {KEY}"}

        async def one(messages: list[dict[str, str]]) -> None:
            nonlocal peak, in_flight
            async with sem:
                in_flight += 1
                peak = max(peak, in_flight)
                try:
                    async with session.post(f"{url}/chat/completions", headers=headers,
                                            json={"model": MODEL, "messages": messages, "max_tokens": 16}) as r:
                        assert r.status == 200
                        await r.json()
                finally:
                    in_flight -= 1

        start = time.perf_counter()
        await asyncio.gather(*(one(m) for m in todo))
        return time.perf_counter() - start, peak


async def pool(url: str, n: int, conc: int) -> tuple[float, int]:
    """The floor: ``conc`` workers on one session, each taking the next request from a shared list."""
    import aiohttp

    todo = _prompts(n)
    todo.reverse()  # pop() from the end takes them in order
    connector = aiohttp.TCPConnector(limit=conc, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        headers = {"authorization": f"Bearer {KEY}"}
        endpoint = f"{url}/chat/completions"

        async def worker() -> None:
            while todo:
                messages = todo.pop()
                async with session.post(endpoint, headers=headers,
                                        json={"model": MODEL, "messages": messages, "max_tokens": 16}) as r:
                    assert r.status == 200
                    await r.json()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        return time.perf_counter() - start, conc


def shape(url: str, n: int, conc: int, latency: float, pairs: int) -> dict[str, Any]:
    ratios, gather_ratios, walls, floors, gathers, peaks = [], [], [], [], [], []
    for i in range(pairs):
        order = [batch, pool, bare] if i % 2 == 0 else [pool, batch, bare]
        got = {fn.__name__: asyncio.run(fn(url, n, conc)) for fn in order}
        (w, peak), (f, _), (g, _) = got["batch"], got["pool"], got["bare"]
        ratios.append(w / f)
        gather_ratios.append(w / g)
        walls.append(w)
        floors.append(f)
        gathers.append(g)
        peaks.append(peak)
    ideal, floor = n / conc * latency, statistics.median(floors)
    if floor > 1.2 * ideal:
        print(f"warning: the floor ({floor:.2f} s) is {floor / ideal:.2f}x the ideal ({ideal:g} s): the server or the "
              "machine is the bottleneck, not the client (more --server-procs, or a longer --latency)",
              file=sys.stderr)
    return {"requests": n, "in_flight": conc, "latency_s": latency, "ideal_s": ideal,
            "floor_vs_ideal": round(floor / ideal, 3), "server_bound": floor > 1.2 * ideal,
            "batch_s": round(statistics.median(walls), 2), "floor_worker_pool_s": round(floor, 2),
            "ratio": round(statistics.median(ratios), 3), "pairs": [round(r, 3) for r in ratios],
            "gather_s": round(statistics.median(gathers), 2),
            "gather_ratio": round(statistics.median(gather_ratios), 3),
            "batch_peak_in_flight": max(peaks)}


_RSS_CHILD = r"""
import asyncio, resource, sys
sys.path.insert(0, sys.argv[3])
from inflight import batch
wall, peak = asyncio.run(batch(sys.argv[1], int(sys.argv[2]), int(sys.argv[2])))
print(wall, peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def rss(url: str, n: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, url, str(n), str(HERE)], capture_output=True, text=True,
                         check=True).stdout.split()
    return {"in_flight": n, "batch_s": round(float(out[0]), 2), "peak_in_flight": int(out[1]),
            "peak_rss_mib": round(int(out[2]) / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--latency", type=float, default=8.0)
    parser.add_argument("--quick", action="store_true", help="1 pair per shape")
    parser.add_argument("--rss", action="store_true", help="also the peak RSS at 10,000 in flight")
    parser.add_argument("--server-procs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="server processes sharing the port (default: half the cores)")
    parser.add_argument("--only", choices=["3000", "1000"], help="run one shape")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    pairs = 1 if args.quick else args.pairs
    _raise_nofile(12_000 if args.rss else 4_000)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores",
                           "conditions": f"client and canned server (benchmarks/_server.py, {args.server_procs} "
                                         "process(es) sharing the port) on one machine; medians of interleaved "
                                         "pairs; floor: a worker pool of N aiohttp tasks pulling from a shared "
                                         "list; floor_vs_ideal > 1.2 (server_bound) means the server or the "
                                         "machine, not the client, set the pace"}
    with canned_server(args.latency * 1000, reply_words=16, processes=args.server_procs) as url:
        if args.only in (None, "3000"):
            out["3000"] = shape(url, 6000, 3000, args.latency, pairs)
        if args.only in (None, "1000"):
            out["1000"] = shape(url, 3000, 1000, args.latency, pairs)
        if args.rss:
            out["rss_10000"] = rss(url, 10_000)
    print(json.dumps(out, indent=2))
    if not args.no_save:
        save_results({"inflight": out}, merge_sections=True)  # a run without --rss keeps the last RSS figure


if __name__ == "__main__":
    main()

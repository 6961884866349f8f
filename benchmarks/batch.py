"""Batch benchmarks: wall time vs ideal, client CPU per request vs openai-python (aiohttp), JSONL peak RSS.

    python benchmarks/batch.py [--repeat 3] [--requests 2000] [--rss-lines 100000]

The server runs in a separate process pinned to the last core, so the client CPU time is its own.
Wall time and CPU use the minimal canned server (benchmarks/_server.py, 16-word replies): FakeServer's
own CPU per request would otherwise cap the rate below the 1,280 req/s the ideal needs on this kind of
machine. The RSS run drives ``python -m holysheep.batch`` against FakeServer. openai + httpx-aiohttp
are imported only here; that row is skipped
with a message when they are missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import KEY, canned_server

MODEL = "gpt-4.1"


@contextmanager
def server_process(latency_ms: float) -> Iterator[tuple[str, str]]:
    code = ("from holysheep.testing import serve; import sys; "
            f"serve(port=0, latency_ms={latency_ms})")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(cpus) >= 2:
            os.sched_setaffinity(proc.pid, {cpus[-1]})
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"at (\S+) api key (\S+)", line)
        if not match:
            raise RuntimeError(f"mock server did not start: {line!r}")
        yield match.group(1), match.group(2)
    finally:
        proc.terminate()
        proc.wait(10)


def pin_client() -> None:
    if hasattr(os, "sched_getaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:
            os.sched_setaffinity(0, {cpus[0]})


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"benchmark prompt {i}"}]


def prompts(n: int) -> list[list[dict[str, str]]]:
    """The ``n`` prompts every runner is handed, built before its clock starts: a batch is timed from the
    call, given the caller's prompts, and the floor gets the very same list."""
    return [messages(i) for i in range(n)]


async def holysheep_batch(url: str, key: str, n: int, conc: int, backend: str) -> float:
    from holysheep import AsyncClient

    kwargs = {"http_backend": backend} if backend else {}  # "": the default transport
    async with AsyncClient(api_key=key, base_url=url, **kwargs) as client:  # type: ignore[arg-type]
        todo = prompts(n)
        start = time.perf_counter()
        results = await client.chat.completions.batch(todo, model=MODEL, concurrency=conc, max_tokens=16)
        wall = time.perf_counter() - start
        assert len(results.responses) == n
    return wall


async def openai_aiohttp(url: str, key: str, n: int, conc: int, backend: str) -> float:
    from openai import AsyncOpenAI, DefaultAioHttpClient

    async with AsyncOpenAI(api_key=key, base_url=url, http_client=DefaultAioHttpClient(), max_retries=0) as client:
        sem = asyncio.Semaphore(conc)
        todo = prompts(n)

        async def one(i: int) -> None:
            async with sem:
                await client.chat.completions.create(model=MODEL, messages=todo[i],  # type: ignore[arg-type]
                                                     max_tokens=16)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - start


async def raw_aiohttp(url: str, key: str, n: int, conc: int, backend: str) -> float:
    """The floor: a bare aiohttp worker pool (``conc`` workers, one session) posting the same JSON
    (no SDK, no parsing into models)."""
    import aiohttp

    headers = {"authorization": f"Bearer {key}"}
    connector = aiohttp.TCPConnector(limit=conc)
    async with aiohttp.ClientSession(connector=connector) as session:
        todo = iter(prompts(n))

        async def worker() -> None:
            for prompt in todo:
                async with session.post(f"{url}/chat/completions", headers=headers, json={
                        "model": MODEL, "messages": prompt, "max_tokens": 16}) as r:
                    await r.read()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        return time.perf_counter() - start


Runner = Callable[[str, str, int, int, str], Awaitable[float]]


def measure(runner: Runner, url: str, key: str, n: int, conc: int, backend: str, repeat: int) -> tuple[float, float]:
    """Median (wall seconds, client CPU µs per request) over ``repeat`` runs after a warm-up."""
    asyncio.run(runner(url, key, min(n, 200), conc, backend))
    walls, cpus = [], []
    for _ in range(repeat):
        c0 = time.process_time()
        walls.append(asyncio.run(runner(url, key, n, conc, backend)))
        cpus.append((time.process_time() - c0) / n * 1e6)
    return statistics.median(walls), statistics.median(cpus)


def measure_pairs(runner: Runner, floor: Runner, url: str, key: str, n: int, conc: int, repeat: int
                  ) -> tuple[float, float, float]:
    """Median wall of ``runner``, median wall of ``floor``, and the median of their per-pair ratios.

    The two run alternately (runner, floor, runner, floor, ...) after a warm-up of each, so a slow
    stretch of a shared machine lands on both sides of a pair instead of on one side of the ratio."""
    for fn in (runner, floor):
        asyncio.run(fn(url, key, min(n, 200), conc, ""))
    walls, floors, ratios = [], [], []
    for _ in range(repeat):
        wall = asyncio.run(runner(url, key, n, conc, ""))
        base = asyncio.run(floor(url, key, n, conc, ""))
        walls.append(wall)
        floors.append(base)
        ratios.append(wall / base)
    return statistics.median(walls), statistics.median(floors), statistics.median(ratios)


def rss_run(lines: int, conc: int) -> tuple[int, float, str]:
    with tempfile.TemporaryDirectory() as tmp, server_process(0.0) as (url, key):
        src, dst = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        with src.open("w") as f:
            for i in range(lines):
                f.write(json.dumps({"custom_id": f"r{i}", "messages": messages(i), "max_tokens": 16}) + "\n")
        env = {**os.environ, "HOLYSHEEP_API_KEY": key}
        cmd = [sys.executable, "-m", "holysheep.batch", str(src), "-o", str(dst), "--base-url", url,
               "--model", MODEL, "--concurrency", str(conc), "--no-progress", "--json"]
        timer = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
        start = time.perf_counter()
        proc = subprocess.run(timer + cmd, env=env, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        kb = int(match.group(1)) if match else 0
        how = "/usr/bin/time -v"
        if not kb:
            import resource
            kb, how = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "getrusage(RUSAGE_CHILDREN)"
        with dst.open() as f:
            assert sum(1 for _ in f) == lines
        return kb, wall, how


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rss-lines", type=int, default=100_000, help="0 skips the RSS run")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    out: dict[str, object] = {}
    pin_client()
    n, conc = args.requests, args.concurrency

    lat = args.latency_ms / 1000
    with canned_server(args.latency_ms, reply_words=16) as url:
        key = KEY
        # (label, requests, concurrency, backend, what the ratio is against, target)
        for label, count, c, backend, target in (
                ("default AsyncClient", n, conc, "", 1.08),
                ("default AsyncClient", 2 * n, 4 * conc, "", 1.3),
                ('http_backend="httpx"', n, conc, "httpx", 3.0)):
            ideal = count / c * lat
            if backend == "httpx":
                wall, _ = measure(holysheep_batch, url, key, count, c, backend, args.repeat)
                ratio, base = wall / ideal, "ideal"
            else:  # interleaved with the bare pool; the ratio is the median of the pairs' ratios
                wall, floor, ratio = measure_pairs(holysheep_batch, raw_aiohttp, url, key, count, c, args.repeat)
                base = f"bare aiohttp pool ({floor:.3f} s), median of {args.repeat} interleaved pairs"
            print(f"wall: {label}, {count} x {args.latency_ms:g} ms at concurrency {c}: median {wall:.3f} s, "
                  f"ideal {ideal:.3f} s; ratio vs {base} {ratio:.3f} (target <= {target})")
            out[f"wall_{backend or 'default'}_{count}x{c}"] = {"wall_s": wall, "ideal_s": ideal, "ratio": ratio,
                                                              "vs": base, "target": target}

    rows: dict[str, float] = {}
    with canned_server(0.0, reply_words=16) as url:
        key = KEY
        for label, runner, backend in (("holysheep batch, default (aiohttp) backend", holysheep_batch, ""),
                                       ("holysheep batch, httpx backend", holysheep_batch, "httpx")):
            _, cpu = measure(runner, url, key, n, conc, backend, args.repeat)
            rows[label] = cpu
        try:
            import httpx_aiohttp  # noqa: F401
            import openai  # noqa: F401
        except ImportError as exc:
            print(f"skipping openai-python + aiohttp row ({exc}); pip install openai httpx-aiohttp")
        else:
            _, cpu = measure(openai_aiohttp, url, key, n, conc, "", args.repeat)
            rows["openai.AsyncOpenAI + DefaultAioHttpClient"] = cpu
    peer = rows.get("openai.AsyncOpenAI + DefaultAioHttpClient")
    print(f"client CPU per request, {conc} in flight, {n} requests, median of {args.repeat}:")
    for label, cpu in rows.items():
        ratio = f" ({cpu / peer:.2f}x openai-aiohttp)" if peer else ""
        print(f"  {label:45s} {cpu:8.0f} us{ratio}")
    if peer:
        mine = rows["holysheep batch, default (aiohttp) backend"]
        print(f"  target: holysheep default <= 0.5x -> {mine / peer:.2f}x")
        out["cpu_vs_openai_aiohttp"] = mine / peer
    out["cpu_us"] = rows

    if args.rss_lines:
        kb, wall, how = rss_run(args.rss_lines, conc)
        print(f"JSONL: {args.rss_lines:,} lines via python -m holysheep.batch in {wall:.1f} s, peak RSS "
              f"{kb / 1024:.1f} MB ({how}; target < 150 MB)")
        out["rss_mb"] = kb / 1024
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()

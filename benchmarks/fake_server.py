"""FakeServer under batch-shaped load: its wall time vs the canned server's (the floor), same client, same run.

    python benchmarks/fake_server.py [--pairs 3] [--requests 2000] [--concurrency 64] [--latency 0.05]

The claim the test suite used to time (tests/testing/test_fake_server_http.py now checks the schedule
exactly): 2,000 requests from a bare aiohttp pool of 64 at 50 ms latency (ideal 1.56 s) finish close to
the ideal, so FakeServer is fast enough to stand in for the API in batch tests. Each server runs in its
own process pinned to the last core (``holysheep.testing.serve`` and benchmarks/_server.py, both with
the latency), the client is pinned to the first. Each pair runs both servers back to back, alternating
which goes first; the ratio is the median of the pairs' ratios. Results are printed as JSON and merged
into benchmarks/results.json under "fake_server".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import KEY, pin_client, save_results

HERE = Path(__file__).resolve().parent
MODEL = "deepseek-v3.2"
TARGET = 1.3
"""FakeServer's wall time at most this many times the canned server's (median of pairs)."""


def _pin_last_core(pid: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            os.sched_setaffinity(pid, {cores[-1]})


@contextlib.contextmanager
def fake_server(latency_s: float) -> Iterator[tuple[str, str]]:
    """``holysheep.testing.serve`` in a subprocess; yields its base URL and API key."""
    code = f"from holysheep.testing import serve; serve(port=0, latency_ms={latency_s * 1000})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        _pin_last_core(proc.pid)
        assert proc.stdout is not None
        match = re.search(r"at (\S+) api key (\S+)", proc.stdout.readline())
        if not match:
            raise RuntimeError("holysheep.testing.serve did not start")
        yield match.group(1), match.group(2)
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def canned(latency_s: float) -> Iterator[tuple[str, str]]:
    """benchmarks/_server.py (16-word replies) in a subprocess; yields its base URL and a key."""
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        proc = subprocess.Popen([sys.executable, str(HERE / "_server.py"), port_file, str(latency_s * 1000), "16"])
        try:
            _pin_last_core(proc.pid)
            deadline = time.monotonic() + 10
            while not os.path.exists(port_file) or not Path(port_file).read_text():
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("benchmark server did not start")
                time.sleep(0.02)
            yield f"http://127.0.0.1:{Path(port_file).read_text()}/v1", KEY
        finally:
            proc.terminate()
            proc.wait(10)


async def pool(url: str, key: str, n: int, conc: int) -> float:
    """``n`` chat requests from ``conc`` workers over an aiohttp pool of ``conc``; the wall time."""
    import aiohttp

    queue = list(range(n))
    connector = aiohttp.TCPConnector(limit=conc)
    async with aiohttp.ClientSession(connector=connector, headers={"authorization": f"Bearer {key}"}) as session:

        async def worker() -> None:
            while queue:
                i = queue.pop()
                body = {"model": MODEL, "messages": [{"role": "user", "content": f"prompt {i}"}], "max_tokens": 16}
                async with session.post(f"{url}/chat/completions", json=body) as r:
                    assert r.status == 200, r.status
                    await r.json()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    pin_client()
    n, conc, latency = args.requests, args.concurrency, args.latency
    fakes, floors, ratios = [], [], []
    with fake_server(latency) as fake, canned(latency) as floor:
        asyncio.run(pool(*fake, 200, conc))  # warm both up: imports, first connections
        asyncio.run(pool(*floor, 200, conc))
        for i in range(args.pairs):
            order = [fake, floor] if i % 2 == 0 else [floor, fake]
            walls = {target: asyncio.run(pool(*target, n, conc)) for target in order}
            fakes.append(walls[fake])
            floors.append(walls[floor])
            ratios.append(walls[fake] / walls[floor])
    ideal = n / conc * latency
    ratio = statistics.median(ratios)
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores",
        "conditions": "bare aiohttp pool (client on the first core) against each server in its own process "
                      "on the last core; medians of interleaved pairs",
        "requests": n, "in_flight": conc, "latency_s": latency, "ideal_s": round(ideal, 3),
        "fake_server_s": round(statistics.median(fakes), 3), "canned_server_s": round(statistics.median(floors), 3),
        "fake_vs_canned": round(ratio, 3), "fake_vs_ideal": round(statistics.median(fakes) / ideal, 3),
        "pairs": [round(r, 3) for r in ratios], "target_fake_vs_canned": TARGET,
    }
    print(json.dumps(out, indent=2))
    print(f"FakeServer {out['fake_server_s']} s vs canned {out['canned_server_s']} s (ideal {out['ideal_s']} s): "
          f"{ratio:.2f}x, target <= {TARGET}: {'ok' if ratio <= TARGET else 'MISSED'}")
    if not args.no_save:
        save_results({"fake_server": out})


if __name__ == "__main__":
    main()

"""Benchmark plumbing: start the canned server in a subprocess, pin the client, time CPU, report ratios."""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KEY = "hs_bench0123456789abcdefABCDEF"
MODEL = "deepseek-v3.2"
MESSAGES = [{"role": "user", "content": "Say something long."}]
PAYLOAD = {"model": MODEL, "messages": MESSAGES, "max_tokens": 16}
"""The request the per-request CPU and instruction benchmarks send."""
RESULTS = HERE / "results.json"
"""Every benchmark's figures, one file; each script replaces only its own keys (`save_results`)."""


def save_results(update: dict[str, Any], *, merge_sections: bool = False) -> Path:
    """Write ``update``'s keys into `RESULTS`, keeping every other benchmark's. With ``merge_sections`` a
    section that is a dict keeps the sub-keys this run did not measure (``inflight --rss`` on another day)."""
    import json

    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for key, value in update.items():
        old = data.get(key)
        merge = merge_sections and isinstance(old, dict) and isinstance(value, dict)
        data[key] = {**old, **value} if merge else value
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")
    return RESULTS


async def inflight(call: Callable[[], Awaitable[Any]], n: int, conc: int) -> None:
    """Run ``call`` ``n`` times with at most ``conc`` in flight."""
    import asyncio

    sem = asyncio.Semaphore(conc)

    async def one() -> None:
        async with sem:
            await call()

    await asyncio.gather(*(one() for _ in range(n)))


@contextlib.contextmanager
def canned_server(latency_ms: float = 0.0, reply_words: int = 330, processes: int = 1) -> Iterator[str]:
    """Start benchmarks/_server.py (``processes`` of it sharing the port); yield its base URL
    (``http://127.0.0.1:PORT/v1``)."""
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        proc = subprocess.Popen([sys.executable, str(HERE / "_server.py"), port_file, str(latency_ms),
                                 str(reply_words), str(processes)])
        try:
            deadline = time.time() + 10
            while not os.path.exists(port_file):
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("benchmark server did not start")
                time.sleep(0.02)
            yield f"http://127.0.0.1:{Path(port_file).read_text()}/v1"
        finally:
            proc.terminate()
            proc.wait(5)


def valgrind_instructions(argv: list[str]) -> int:
    """Instructions the command ``argv`` runs, counted by ``valgrind --tool=cachegrind`` (no cache model)."""
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          *argv], capture_output=True, text=True, check=True)
    match = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count from valgrind: {out.stderr[-400:]}")
    return int(match.group(1).replace(",", ""))


def pin_client() -> None:
    """Keep the client on the first core (the server runs on the last)."""
    with contextlib.suppress(AttributeError, OSError):
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            os.sched_setaffinity(0, {cores[0]})


def cpu_us_per_call(fn: Callable[[], object], n: int, rounds: int = 5, warmup: int = 50) -> float:
    """Median over ``rounds`` of the process CPU time per call, in microseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(n):
            fn()
        samples.append((time.process_time() - start) / n * 1e6)
    return statistics.median(samples)


def print_table(title: str, rows: list[tuple[str, float]], unit: str, baseline: dict[str, float]) -> None:
    """Print rows with ratios to each named baseline row."""
    print(f"\n{title}")
    names = list(baseline)
    print(f"  {'client':<44} {unit:>10}  " + "  ".join(f"{'x ' + n:>14}" for n in names))
    for label, value in rows:
        ratios = "  ".join(f"{value / baseline[n]:>14.2f}" if baseline[n] else f"{'-':>14}" for n in names)
        print(f"  {label:<44} {value:>10.0f}  {ratios}")

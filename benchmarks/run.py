"""Every benchmark in one run, side by side, against a fast local server; writes benchmarks/results.json.

Run: ``python benchmarks/run.py [--quick]``. Client CPU is the process CPU time (user+sys) of this
process, pinned to the first core, while the canned server (benchmarks/_server.py) runs in a
subprocess on the last core. Each figure is a median over rounds; ratios are computed within this run,
which is what the targets refer to (absolute numbers drift with the machine's load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _cases
from _common import HERE, canned_server, pin_client, print_table, save_results

TARGETS = {
    "sync_json_vs_openai": 0.5, "sync_json_vs_raw": 1.3, "stream_vs_openai": 0.4, "stream_vs_raw": 1.5,
    "async64_vs_openai_aiohttp": 0.5, "import_vs_openai": 0.35,
    "batch_64_vs_bare_aiohttp": 1.08, "batch_256_vs_bare_aiohttp": 1.3, "batch_httpx_64_vs_ideal": 3.0,
    "batch_cpu_vs_openai_aiohttp": 0.5,
}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def _batch_ratios(batch: dict[str, Any]) -> dict[str, float | None]:
    rows = [v for k, v in batch.items() if k.startswith("wall_")]
    names = ("batch_64_vs_bare_aiohttp", "batch_256_vs_bare_aiohttp", "batch_httpx_64_vs_ideal")
    return {name: round(row["ratio"], 3) if row else None
            for name, row in zip(names, (rows + [None] * 3)[:3], strict=True)}


def _script(name: str, *args: str) -> dict[str, Any]:
    """Run another benchmark script with ``--json PATH``; echo its report and return the JSON it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.json")
        out = subprocess.run([sys.executable, str(HERE / name), *args, "--json", path], capture_output=True,
                             text=True, timeout=1800, check=False)
        print(out.stdout.rstrip())
        if out.returncode != 0 or not os.path.exists(path):
            print(f"  {name} failed: {out.stderr.strip()[-400:]}")
            return {}
        data: dict[str, Any] = json.loads(Path(path).read_text())
        return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests (noisier)")
    args = parser.parse_args()
    scale = 0.3 if args.quick else 1.0
    pin_client()
    results: dict[str, object] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                                              f"Python {platform.python_version()}",
                                  "date": time.strftime("%Y-%m-%d")}
    with canned_server() as url:
        sync = _cases.sync_json(url, int(1000 * scale))
        print_table("Sync JSON (350-token reply), CPU µs per request", list(sync.items()), "µs",
                    {"openai": sync.get("openai.OpenAI", 0.0), "raw httpx": sync["raw httpx.Client"]})
        stream = _cases.stream(url, int(400 * scale))
        print_table("SSE stream (22 events), CPU µs per stream", list(stream.items()), "µs",
                    {"openai": stream.get("openai.OpenAI stream", 0.0),
                     "raw httpx": stream["raw httpx.Client iter_lines"]})
        inflight = _cases.async_inflight(url, int(2000 * scale))
        print_table("Async, 64 in flight, CPU µs per request", list(inflight.items()), "µs",
                    {"openai aiohttp": inflight.get("openai.AsyncOpenAI (aiohttp)", 0.0)})
    imports = _script("import_time.py", "--runs", "7" if args.quick else "15")
    batch = _script("batch.py", "--rss-lines", "0", "--repeat", "1" if args.quick else "3")
    ratios = {
        "sync_json_vs_openai": _ratio(sync.get("holysheep.Client"), sync.get("openai.OpenAI")),
        "sync_json_vs_raw": _ratio(sync.get("holysheep.Client"), sync.get("raw httpx.Client")),
        "stream_vs_openai": _ratio(stream.get("holysheep.Client stream"), stream.get("openai.OpenAI stream")),
        "stream_vs_raw": _ratio(stream.get("holysheep.Client stream"), stream.get("raw httpx.Client iter_lines")),
        "async64_vs_openai_aiohttp": _ratio(inflight.get("holysheep.AsyncClient (aiohttp)"),
                                            inflight.get("openai.AsyncOpenAI (aiohttp)")),
        "import_vs_openai": imports.get("ratio_import"),
        **_batch_ratios(batch),
        "batch_cpu_vs_openai_aiohttp": batch.get("cpu_vs_openai_aiohttp"),
    }
    print("\nTargets (ratio ≤ target):")
    for name, target in TARGETS.items():
        value = ratios.get(name)
        verdict = "n/a" if value is None else ("ok" if value <= target else "MISSED")
        print(f"  {name:<28} {value!s:>7}  target ≤ {target:<5} {verdict}")
    results.update({"sync_json_us": sync, "stream_us": stream, "async64_us": inflight, "import": imports,
                    "batch": batch, "ratios": ratios, "targets": TARGETS})
    print(f"\nwrote {save_results(results)}")  # the other benchmarks' sections stay


if __name__ == "__main__":
    main()

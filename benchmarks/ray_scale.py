"""Ray scale-out: rows per second for 1, 2 and 4 replicas next to the single-process batch, same run.

    python benchmarks/ray_scale.py [--rows 2000] [--concurrency 32] [--latency-ms 50]

Needs `pip install -e '.[ray]'`. The server is the canned benchmark server (benchmarks/_server.py) with a
fixed per-request latency, in its own process. Each Ray job starts its own actor pool; the start-up is
measured separately (a job of one row per replica) and reported, and `steady rows/s` leaves it out.
A local cluster is started with `ray.init(num_cpus=2)`: the numbers say how far one machine's Ray goes;
on a real cluster replicas run on other machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from _common import KEY, canned_server

MODEL = "gpt-4.1"


def single_process(url: str, prompts: list[str], concurrency: int) -> float:
    from holysheep import AsyncClient

    async def main() -> float:
        async with AsyncClient(api_key=KEY, base_url=url, max_retries=0) as client:
            started = time.perf_counter()
            results = await client.chat.completions.batch(prompts, model=MODEL, concurrency=concurrency,
                                                          check_quota=False, max_tokens=16)
            wall = time.perf_counter() - started
            assert not results.failed, results.failed[:1]
            return wall

    return asyncio.run(main())


def ray_job(url: str, prompts: list[str], replicas: int, concurrency: int) -> float:
    import ray

    from holysheep.integrations.ray import build_processor

    processor = build_processor(model=MODEL, replicas=replicas, concurrency_per_replica=concurrency,
                                api_key=KEY, base_url=url, batch_size=4 * concurrency, max_tokens=16)
    ds = ray.data.from_items([{"prompt": p} for p in prompts], override_num_blocks=max(8, 4 * replicas))
    started = time.perf_counter()
    out = processor(ds).materialize()
    wall = time.perf_counter() - started
    errors = out.filter(lambda row: row["error"] is not None).count()
    assert out.count() == len(prompts) and errors == 0, f"{errors} rows failed"
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--replicas", default="1,2,4")
    args = parser.parse_args()
    import ray

    prompts = [f"prompt number {i}" for i in range(args.rows)]
    rows: list[dict[str, Any]] = []
    with canned_server(latency_ms=args.latency_ms, reply_words=16) as url:
        ideal = args.rows * args.latency_ms / 1000 / args.concurrency
        for label, conc in (("single process", args.concurrency), ("single process", 4 * args.concurrency)):
            wall = single_process(url, prompts, conc)
            rows.append({"run": f"{label}, concurrency {conc}", "wall_s": wall, "rows_per_s": args.rows / wall})
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        for replicas in (int(r) for r in args.replicas.split(",")):
            startup = ray_job(url, prompts[:replicas], replicas, args.concurrency)
            wall = ray_job(url, prompts, replicas, args.concurrency)
            rows.append({"run": f"ray, {replicas} replica(s) x {args.concurrency}", "wall_s": wall,
                         "rows_per_s": args.rows / wall, "startup_s": startup,
                         "steady_rows_per_s": args.rows / max(wall - startup, 1e-9)})
        ray.shutdown()
    base = rows[0]["rows_per_s"]
    print(f"{args.rows} rows, {args.latency_ms:g} ms server; ideal for one process at concurrency "
          f"{args.concurrency}: {ideal:.2f} s ({args.rows / ideal:,.0f} rows/s)")
    print(f"{'run':38} {'wall s':>8} {'rows/s':>9} {'x single':>9} {'start-up s':>11} {'steady rows/s':>14}")
    for row in rows:
        print(f"{row['run']:38} {row['wall_s']:8.2f} {row['rows_per_s']:9.0f} {row['rows_per_s'] / base:9.2f} "
              f"{row.get('startup_s', 0):11.2f} {row.get('steady_rows_per_s', row['rows_per_s']):14.0f}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

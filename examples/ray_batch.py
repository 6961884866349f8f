"""Batch inference over a Ray dataset: replicas sharing one RPM limit, re-running only what is missing.
Runs offline against a local FakeServer on a local 2-CPU Ray cluster.

    pip install 'holysheep[ray]'
    python examples/ray_batch.py
"""

from __future__ import annotations

import sys

try:
    import ray
    import ray.data
except ImportError:
    print("This example needs Ray: pip install 'holysheep[ray]'. Skipped.")
    sys.exit(0)

from holysheep.integrations.ray import build_processor
from holysheep.testing import FakeServer


def main() -> None:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    prompts = ray.data.from_items([{"custom_id": f"q{i}", "prompt": f"Say {i} in French."} for i in range(40)])
    # What an earlier run that was killed half-way wrote (usually: skip_done="s3://bucket/results/").
    earlier = ray.data.from_items([{"custom_id": f"q{i}", "error": None} for i in range(20)])
    with FakeServer(latency=0.02) as server:
        processor = build_processor(
            model="deepseek-v3.2", replicas=2, concurrency_per_replica=8,
            rpm=6_000,                                   # one limit for the whole cluster
            api_key=server.api_key, base_url=server.url,  # or HOLYSHEEP_API_KEY / HOLYSHEEP_BASE_URL
            max_tokens=64, temperature=0,                # any create() parameter
            skip_done=earlier,                           # send only the rows not answered before
        )
        rows = processor(prompts).take_all()             # lazy until consumed; write_parquet(...) works too
        print(f"answered {len(rows)} rows with {len(server.requests)} requests (20 were done before)")
        for row in sorted(rows, key=lambda r: int(r["custom_id"][1:]))[:3]:
            print(f"{row['custom_id']}: {row['response']!r} error={row['error']} attempts={row['attempts']}")
    ray.shutdown()


if __name__ == "__main__":
    main()

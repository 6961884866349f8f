"""Batch inference over a Ray dataset: 4 replicas sharing one RPM limit, then a re-run that sends only what
is missing. Runs offline against a local FakeServer on a local 2-CPU Ray cluster.

    pip install 'holysheep[ray]'
    python examples/ray_batch.py
"""

from __future__ import annotations

import sys
import tempfile

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
    with FakeServer(latency=0.02) as server, tempfile.TemporaryDirectory() as results_dir:
        processor = build_processor(
            model="deepseek-v3.2", replicas=4, concurrency_per_replica=8,
            rpm=6_000,                                   # one limit for the whole cluster
            api_key=server.api_key, base_url=server.url,  # or HOLYSHEEP_API_KEY / HOLYSHEEP_BASE_URL
            max_tokens=64, temperature=0,                # any create() parameter
        )
        # A first run that only got through half the rows (say the job was killed).
        processor(prompts.limit(20)).write_parquet(results_dir)
        server.reset()

        rerun = build_processor(model="deepseek-v3.2", replicas=4, concurrency_per_replica=8, rpm=6_000,
                                api_key=server.api_key, base_url=server.url, max_tokens=64, temperature=0,
                                skip_done=results_dir)
        rows = rerun(prompts).take_all()
        print(f"re-run answered {len(rows)} rows and sent {len(server.requests)} requests")
        for row in sorted(rows, key=lambda r: int(r["custom_id"][1:]))[:3]:
            print(f"{row['custom_id']}: {row['response']!r} error={row['error']} attempts={row['attempts']}")
    ray.shutdown()


if __name__ == "__main__":
    main()

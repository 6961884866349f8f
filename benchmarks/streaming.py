"""Streaming CPU benchmark: client CPU µs per 22-event SSE stream, holysheep vs openai-python vs raw httpx.

Run: ``python benchmarks/streaming.py [-n 300]``. The canned server runs in a subprocess on another core;
the figures are medians of 5 rounds of the client's process CPU time. Targets: ≤ 0.4× openai, ≤ 1.5× raw.
"""

from __future__ import annotations

import argparse

import _cases
from _common import canned_server, pin_client, print_table


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300, help="streams per round")
    args = parser.parse_args()
    pin_client()
    with canned_server() as url:
        res = _cases.stream(url, args.n)
    base = {"openai": res.get("openai.OpenAI stream", 0.0), "raw httpx": res["raw httpx.Client iter_lines"]}
    print_table("SSE stream (22 events), CPU µs per stream", list(res.items()), "µs", base)
    return res


if __name__ == "__main__":
    main()

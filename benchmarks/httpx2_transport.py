"""Is httpx2 a faster sync transport than httpx? CPU per request, interleaved pairs, one run.

Run: ``python benchmarks/httpx2_transport.py [--n 300] [--rounds 9] [--json PATH]``. Against the canned server
(a subprocess on the last core), this process pinned to the first: per round, each case sends ``n`` non-streamed
chat completions and ``n`` streams, and the cases take turns within the round, so load drift hits them alike.
Reported: the median CPU µs per request of each case and the medians of the per-round ratios
(``httpx2 / httpx``): the raw clients alone, and holysheep's ``Client`` on its own httpx pool against the same
``Client`` sending through an ``http_client=httpx2.Client()``. holysheep would make httpx2 its default sync
transport only if the raw ratio were clearly below 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
from _common import KEY, MESSAGES, PAYLOAD, canned_server, pin_client

import holysheep

Case = Callable[[], object]


def _cases(url: str, stack: list[Any]) -> dict[str, Case]:
    headers = {"authorization": f"Bearer {KEY}"}
    raw1 = httpx.Client()
    raw2 = httpx2.Client()
    hs1 = holysheep.Client(api_key=KEY, base_url=url)
    hs2 = holysheep.Client(api_key=KEY, base_url=url, http_client=httpx2.Client())
    stack += [raw1, raw2, hs1, hs2]
    stream_body = {**PAYLOAD, "stream": True}

    def raw(http: Any) -> Case:
        def one() -> None:
            http.post(f"{url}/chat/completions", json=PAYLOAD, headers=headers).json()
            with http.stream("POST", f"{url}/chat/completions", json=stream_body, headers=headers) as r:
                for _ in r.iter_lines():
                    pass
        return one

    def ours(client: holysheep.Client) -> Case:
        def one() -> None:
            client.chat.completions.create(model=PAYLOAD["model"], messages=MESSAGES, max_tokens=16)
            with client.chat.completions.create(model=PAYLOAD["model"], messages=MESSAGES, max_tokens=16,
                                                stream=True) as s:
                for _ in s:
                    pass
        return one

    return {"raw httpx": raw(raw1), "raw httpx2": raw(raw2), "holysheep (httpx)": ours(hs1),
            "holysheep (httpx2 http_client)": ours(hs2)}


def _cpu_us(fn: Case, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300, help="requests (a JSON reply and a stream) per case per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    pin_client()
    stack: list[Any] = []
    samples: dict[str, list[float]] = {}
    with canned_server() as url:
        cases = _cases(url, stack)
        for fn in cases.values():
            for _ in range(30):
                fn()
        for r in range(args.rounds):
            order = list(cases.items()) if r % 2 == 0 else list(reversed(cases.items()))
            for name, fn in order:
                samples.setdefault(name, []).append(_cpu_us(fn, args.n))
    for obj in stack:
        obj.close()
    med = {name: statistics.median(v) for name, v in samples.items()}
    ratios = {
        "raw_httpx2_vs_httpx": statistics.median(
            a / b for a, b in zip(samples["raw httpx2"], samples["raw httpx"], strict=True)),
        "holysheep_httpx2_vs_httpx": statistics.median(
            a / b for a, b in zip(samples["holysheep (httpx2 http_client)"], samples["holysheep (httpx)"],
                                  strict=True)),
    }
    print(f"CPU per request (a JSON reply + a stream), median of {args.rounds} interleaved rounds of {args.n}:")
    for name, value in med.items():
        print(f"  {name:<34} {value:>8.0f} µs")
    for name, value in ratios.items():
        print(f"  {name:<34} {value:>8.3f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu_us": med, "ratios": ratios, "n": args.n, "rounds": args.rounds}, f, indent=2)


if __name__ == "__main__":
    main()

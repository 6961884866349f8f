"""Response cache: what a lookup costs next to a request, in client CPU (target: <= 10 %).

    python benchmarks/cache.py [-n 500] [--rounds 5] [--entries 2000] [--json]

The floor is one request measured in the same run: ``Client.chat.completions.create`` against the canned
server (a subprocess pinned to the other core, so only the client's CPU counts), with the same body.
Against it, on an SQLite cache file holding ``--entries`` responses of the same size:

- ``miss``: the key of the request (canonical JSON + SHA-256) and a lookup that finds nothing: what
  every request pays on top when the cache is on and the answer is not there;
- ``hit``: key, lookup and the stored completion parsed into a ``ChatCompletion`` (replaces the request);
- ``store``: writing one response (one committed transaction), paid once per new answer.

Each figure is the median over ``--rounds`` of the process CPU per call (``time.process_time``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import KEY, MODEL, canned_server, cpu_us_per_call, pin_client

TARGET = 0.10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=500, help="calls per round (default 500)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--entries", type=int, default=2000, help="responses in the cache file (default 2000)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    from holysheep import Client
    from holysheep.cache import open_cache

    pin_client()
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Say something long."}], "max_tokens": 16}
    with canned_server() as url, Client(api_key=KEY, base_url=url, max_retries=0) as client, \
            tempfile.TemporaryDirectory() as tmp:
        reply = client.chat.completions.create(**body)  # type: ignore[arg-type]
        request_us = cpu_us_per_call(lambda: client.chat.completions.create(**body),  # type: ignore[arg-type]
                                     args.n, args.rounds)
        cache = open_cache(Path(tmp) / "bench.db")
        for i in range(args.entries):
            key = cache.key({**body, "seed": i})
            assert key is not None
            cache.put(key, reply)
        hit_key = cache.key({**body, "seed": 7})
        assert hit_key is not None
        counter = iter(range(10**9))

        def miss() -> object:
            key = cache.key({**body, "seed": -1 - next(counter)})
            assert key is not None
            return cache.get(key)

        def hit() -> object:
            key = cache.key({**body, "seed": 7})
            assert key is not None
            return cache.get(key)

        def store() -> None:
            key = cache.key({**body, "seed": 10**6 + next(counter)})
            assert key is not None
            cache.put(key, reply)

        miss_us = cpu_us_per_call(miss, args.n, args.rounds)
        hit_us = cpu_us_per_call(hit, args.n, args.rounds)
        store_us = cpu_us_per_call(store, args.n // 5 or 1, args.rounds, warmup=5)
        cache.close()
    figures = {"request_us": round(request_us, 1), "miss_us": round(miss_us, 1), "hit_us": round(hit_us, 1),
               "store_us": round(store_us, 1), "miss_ratio": round(miss_us / request_us, 3),
               "hit_ratio": round(hit_us / request_us, 3), "store_ratio": round(store_us / request_us, 3),
               "entries": args.entries, "target": TARGET}
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"request (create, floor) {request_us:8.1f} µs CPU")
        for name in ("miss", "hit", "store"):
            print(f"cache {name:<17} {figures[name + '_us']:8.1f} µs CPU  = {figures[name + '_ratio']:.1%} "
                  "of a request")
    ok = figures["miss_ratio"] <= TARGET and figures["hit_ratio"] <= TARGET
    print(f"lookups within {TARGET:.0%} of a request: {'yes' if ok else 'NO'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

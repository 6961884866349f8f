"""Instructions per batch item at the 256 benchmark's shape, counted by valgrind: load-independent figures
behind the wall-time ratio of ``batch.py``.

    python benchmarks/batch_instructions.py [--items 3000] [--latency-ms 50] [--only NAME ...] [--no-gc]

Each runner goes through ``--items`` requests at concurrency 256 against the canned server (50 ms, 16-word
replies), in a child interpreter under ``valgrind --tool=cachegrind``. The marginal count, (count at
``items`` - count at ``items / 3``) / (2/3 ``items``), leaves out start-up and the warm-up. Runners:

- ``batch``: ``AsyncClient.chat.completions.batch`` (results kept, as the batch returns them);
- ``create_pool``: 256 workers awaiting ``create()`` (each reply dropped);
- ``create_pool_keep``: the same, keeping every ``ChatCompletion``;
- ``floor``: the bare aiohttp worker pool of ``batch.py`` (each body read and dropped).

``--no-gc`` disables Python's cyclic garbage collector in the children: the difference is what the
collector costs each runner (keeping 4,000 pydantic results makes its collections more frequent).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from _common import KEY, canned_server, valgrind_instructions

CONCURRENCY = 256


async def _create_pool(url: str, n: int, keep: bool) -> None:
    import holysheep
    from batch import MODEL, prompts

    kept: list[Any] = []
    async with holysheep.AsyncClient(api_key=KEY, base_url=url) as client:
        todo = iter(prompts(n))

        async def worker() -> None:
            for prompt in todo:
                reply = await client.chat.completions.create(model=MODEL, messages=prompt,  # type: ignore[arg-type]
                                                             max_tokens=16)
                if keep:
                    kept.append(reply)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


def _runners() -> dict[str, Callable[[str, int], Awaitable[Any]]]:
    import batch as b

    return {
        "batch": lambda url, n: b.holysheep_batch(url, KEY, n, CONCURRENCY, ""),
        "create_pool": lambda url, n: _create_pool(url, n, keep=False),
        "create_pool_keep": lambda url, n: _create_pool(url, n, keep=True),
        "floor": lambda url, n: b.raw_aiohttp(url, KEY, n, CONCURRENCY, ""),
    }


def child(name: str, n: int, url: str, no_gc: bool) -> None:
    if no_gc:
        import gc

        gc.disable()
    run = _runners()[name]
    asyncio.run(run(url, 200))  # warm-up: imports, caches, the rate-limit memory
    if n:
        asyncio.run(run(url, n))


def _count(name: str, n: int, url: str, no_gc: bool) -> int:
    return valgrind_instructions([sys.executable, __file__, "--child", name, str(n), url]
                                 + (["--no-gc"] if no_gc else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-gc", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "N", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2], args.no_gc)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    names = args.only or list(_runners())
    small = args.items // 3
    per: dict[str, float] = {}
    with canned_server(args.latency_ms, reply_words=16) as url:
        for name in names:
            a, b = _count(name, small, url, args.no_gc), _count(name, args.items, url, args.no_gc)
            per[name] = (b - a) / (args.items - small)
            print(f"{name:<18} {per[name] / 1000:>7.0f} k instructions/item", flush=True)
    if "floor" in per:
        for name in names:
            if name != "floor":
                print(f"{name:<18} {per[name] / per['floor']:.2f}x the floor")


if __name__ == "__main__":
    main()

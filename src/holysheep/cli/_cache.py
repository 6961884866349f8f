"""``holysheep cache stats PATH`` / ``holysheep cache clear PATH``: look after a response-cache file."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

from holysheep.cli._output import EXIT_OK, EXIT_USAGE, error, print_json

__all__ = ["add_cache_parser"]


def add_cache_parser(sub: Any) -> None:
    """Register ``cache`` (with ``stats`` and ``clear``) on the sub-parsers object."""
    p = sub.add_parser("cache", help="show or clear a response cache file (batch --cache, Client(cache=))",
                       description="Show what a response cache file holds and what it saved, or empty it.")
    p.add_argument("action", choices=["stats", "clear"], help="stats: entries, size, hits, saving; clear: empty it")
    p.add_argument("path", help="the cache file (as given to --cache / cache=)")
    p.set_defaults(func=run_cache)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_cache(args: argparse.Namespace) -> int:
    """Run ``holysheep cache``."""
    from holysheep.cache import SQLiteCache

    path = Path(args.path)
    if not path.is_file():
        error(f"no cache file at {path}")
        return EXIT_USAGE
    store = SQLiteCache(path)
    try:
        if args.action == "clear":
            removed = store.clear()
            if args.json:
                print_json({"path": str(path), "removed": removed})
            else:
                print(f"removed {removed} cached response(s) from {path}", file=sys.stderr)
            return EXIT_OK
        stats = store.stats()
    finally:
        store.close()
    if args.json:
        print_json(stats.to_dict())
        return EXIT_OK
    mib = stats.bytes / 2**20
    print(f"{stats.path}: {stats.entries} response(s), {mib:.2f} MiB\n"
          f"  stored responses cost ${stats.stored_cost_usd:.4f} when fetched\n"
          f"  hits {stats.hits}, saved ${stats.saved_usd:.4f} (processes that closed the cache cleanly)\n"
          f"  oldest {_when(stats.oldest)}, newest {_when(stats.newest)}")
    for model, count in stats.by_model.items():
        print(f"  {model or '(no model)'}: {count}")
    return EXIT_OK

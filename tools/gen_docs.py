"""Regenerate every docs table and figure that comes from data (GPU table, catalog, prices, defaults, benchmarks).

    python tools/gen_docs.py           # rewrite the stale blocks of README.md and docs/*.md in place
    python tools/gen_docs.py --check   # exit 1 listing the stale blocks with a diff; exit 0 when all are fresh

Run it after changing a data file (src/holysheep/**/data/*.json, benchmarks/results.json), a client default or
the retry table.
The blocks and the functions that write them are in tools/docgen/blocks.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None, root: Path = ROOT, cache: dict[str, str] | None = None) -> int:
    """The command line; `root` and `cache` (block name -> text, kept between calls) are for the tests."""
    parser = argparse.ArgumentParser(prog="gen_docs.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if any block is stale")
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.docgen import BLOCKS, find_stale, rewrite
    from tools.docgen.engine import GeneratedBlockError

    try:
        stale = find_stale(root, BLOCKS, cache) if args.check else rewrite(root, BLOCKS, cache)
    except GeneratedBlockError as e:
        print(f"gen_docs.py: error: {e}", file=sys.stderr)
        return 2
    for s in stale:
        if args.check:
            sys.stdout.write(s.diff)
        print(f"{s.path}: {'stale' if args.check else 'rewrote'} {', '.join(s.names)}", file=sys.stderr)
    if args.check and stale:
        print(f"gen_docs.py: {len(stale)} page(s) stale; run `python tools/gen_docs.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m holysheep.batch INPUT.jsonl -o OUTPUT.jsonl [...]``."""

from __future__ import annotations

import sys

from holysheep.cli._app import run


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the batch command, exactly as ``holysheep batch`` does (one line per error,
    never a traceback, the same exit codes)."""
    return run(["batch", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

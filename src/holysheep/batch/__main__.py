"""``python -m holysheep.batch INPUT.jsonl -o OUTPUT.jsonl [...]``."""

from __future__ import annotations

import sys

from holysheep.cli._batch import build_parser, run_batch_command


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the batch command."""
    return run_batch_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

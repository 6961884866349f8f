"""``-`` as ``holysheep batch``'s input (stdin) or output (stdout), spooled through a private temporary folder:
the runner needs files (it checks the input before sending, and appends, compacts and locks the output)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["run_with_std_streams"]


def run_with_std_streams(args: argparse.Namespace, run: Callable[[argparse.Namespace], int]) -> int:
    """Run ``run(args)`` with ``INPUT -`` read from stdin and ``-o -`` written to stdout (the result lines
    only: progress, the summary and errors stay on stderr)."""
    stdin, stdout = args.input == "-", args.output == "-"
    if not (stdin or stdout):
        return run(args)
    dry = getattr(args, "dry_run", False)
    conflicts = [flag for flag, on in (
        ("--ray", getattr(args, "ray", False)),  # the cluster reads the input and writes a folder itself
        ("--resume", stdout and args.resume),  # there is no earlier output to continue
        ("--json", stdout and not dry and getattr(args, "json", False)),  # the report would mix with the results
    ) if on]
    if conflicts:
        from holysheep.cli._output import error

        error(f"'-' (stdin/stdout) cannot be used with {', '.join(conflicts)}: name a file instead.")
        return 2
    with tempfile.TemporaryDirectory(prefix="holysheep-batch-") as folder:
        if stdin:
            source = Path(folder) / "stdin.jsonl"
            with source.open("wb") as spool:
                shutil.copyfileobj(sys.stdin.buffer, spool)
            args.input = str(source)
        if stdout:
            args.output = None if dry else str(Path(folder) / "stdout.jsonl")
            args.output_label = "stdout"
        try:
            return run(args)
        finally:
            if stdout and args.output is not None and Path(args.output).is_file():
                with open(args.output, "rb") as results:
                    shutil.copyfileobj(results, sys.stdout.buffer)
                sys.stdout.flush()

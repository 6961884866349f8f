"""The ``holysheep`` command line (``holysheep --help``; documented in ``docs/cli.md``).

Importing ``holysheep`` does not load this package; it loads rich only when it draws a table or a bar.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    from holysheep.cli._app import run

    return run(argv)

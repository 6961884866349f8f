"""``python -m holysheep``: the same as the ``holysheep`` command."""

from __future__ import annotations

import sys

from holysheep.cli import main

if __name__ == "__main__":
    sys.exit(main())

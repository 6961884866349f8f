"""An uncaught `BatchInterrupted` ends a script with exit status 130, as `holysheep batch` does on Ctrl-C.

Python gives an uncaught `KeyboardInterrupt` the exit status of SIGINT only when its type is exactly
`KeyboardInterrupt`; a subclass ends with 1. When a `BatchInterrupted` is created, this installs a
`sys.excepthook` (only over Python's default one, so IPython/Jupyter and user hooks are left alone) that
prints the traceback as usual and then exits with 130. Files left open are flushed first, because
exiting from the hook keeps the failed frames (and whatever they hold) alive.
"""

from __future__ import annotations

import gc
import io
import sys
from types import TracebackType

__all__ = ["EXIT_INTERRUPTED", "install_exit_hook"]

EXIT_INTERRUPTED = 130
"""128 + SIGINT: what shells report for Ctrl-C."""


def _flush_open_files() -> None:
    for obj in gc.get_objects():
        if isinstance(obj, io.IOBase):
            try:
                if not obj.closed and obj.writable():
                    obj.flush()
            except Exception:  # best effort on the way out
                continue


def _hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    sys.__excepthook__(exc_type, exc, tb)
    if _interrupted is not None and isinstance(exc, _interrupted):
        _flush_open_files()
        raise SystemExit(EXIT_INTERRUPTED)


_interrupted: type[BaseException] | None = None


def install_exit_hook(interrupted: type[BaseException]) -> None:
    """Make an uncaught ``interrupted`` (`BatchInterrupted`, which passes itself) exit with 130
    (idempotent; leaves custom hooks alone)."""
    global _interrupted
    _interrupted = interrupted
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = _hook

"""Progress display on stderr for ``holysheep bench``: rich bar, a redrawn plain line, or periodic lines."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Protocol

__all__ = ["Progress", "make_progress"]


class Progress(Protocol):
    """What the bench loop calls."""

    def start(self, label: str, total: int) -> None: ...
    def update(self, done: int, failed: int) -> None: ...
    def finish(self) -> None: ...
    def close(self) -> None: ...


class _Null:
    def start(self, label: str, total: int) -> None:
        pass

    def update(self, done: int, failed: int) -> None:
        pass

    def finish(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Lines:
    """Plain text: redrawn with ``\\r`` on a terminal, else one line at most every 2 s and at the end."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.label, self.total, self.done, self.failed = "", 0, 0, 0
        self.t0 = self.last = 0.0

    def _line(self) -> str:
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        return (f"bench {self.label}: {self.done}/{self.total} done, {self.failed} failed, "
                f"{rate:.1f} req/s")

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done, self.failed = label, total, 0, 0
        self.t0 = self.last = time.perf_counter()

    def update(self, done: int, failed: int) -> None:
        self.done, self.failed = done, failed
        now = time.perf_counter()
        if self.tty:
            sys.stderr.write("\r" + self._line())
            sys.stderr.flush()
        elif now - self.last >= 2.0:
            self.last = now
            print(self._line(), file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\r" + self._line() + "\n")
        else:
            print(self._line(), file=sys.stderr, flush=True)
        sys.stderr.flush()

    def close(self) -> None:
        pass


class _Rich:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                            console=Console(stderr=True), transient=False)
        self.task: Any = None
        self.started = False

    def start(self, label: str, total: int) -> None:
        if not self.started:
            self.bar.start()
            self.started = True
        self.task = self.bar.add_task(label, total=total, failed=0)

    def update(self, done: int, failed: int) -> None:
        self.bar.update(self.task, completed=done, failed=failed)

    def finish(self) -> None:
        pass

    def close(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False


def make_progress(enabled: bool = True) -> Progress:
    """rich on a terminal when installed; plain lines otherwise; nothing when disabled."""
    if not enabled:
        return _Null()
    tty = sys.stderr.isatty()
    if tty and not os.environ.get("HOLYSHEEP_PLAIN"):
        try:
            return _Rich()
        except ImportError:
            pass
    return _Lines(tty)

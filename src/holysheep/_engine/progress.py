"""Progress display for a batch (and ``holysheep bench``): a rich bar when rich is installed (the ``cli``
extra), else plain lines.

Both show done/total, failed, rate, ETA, tokens and cost, refreshed at most a few times a second. For
your own display pass ``on_progress=callback`` (called with `BatchStats` after every result),
or any object with ``start``/``update``/``close`` methods as ``progress=``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from holysheep._egress import scrub
from holysheep._engine.results import BatchStats
from holysheep._exceptions import HolySheepError

__all__ = ["PLAIN_INTERVAL_S", "MissingExtraError", "NotebookProgress", "PlainProgress", "ProgressReporter",
           "RichProgress", "describe", "make_progress", "with_total"]


class MissingExtraError(HolySheepError, ImportError):
    """An optional feature needs a package that is not installed; the message names the extra to install."""


class ProgressReporter(Protocol):
    """What ``progress=`` accepts besides True/False."""

    def start(self, stats: BatchStats) -> None: ...
    def update(self, stats: BatchStats) -> None: ...
    def close(self, stats: BatchStats) -> None: ...


def _eta(stats: BatchStats) -> str:
    eta = stats.eta_s
    if eta is None:
        return "--:--"
    minutes, seconds = divmod(int(eta), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def describe(stats: BatchStats) -> str:
    """One status line: `120/1000 done, 2 failed, 35.1 req/s, ETA 00:25, 48,210 tokens, $0.0123`
    (the cost only when it is known)."""
    total = "?" if stats.total is None else f"{stats.total:,}"
    cost = f", {_cost(stats)}" if stats.cost_known else ""
    return (f"{stats.done:,}/{total} done, {stats.failed:,} failed, {_request_rate(stats):.1f} req/s, "
            f"ETA {_eta(stats)}, {stats.tokens:,} tokens{cost}")


def _request_rate(stats: BatchStats) -> float:
    """Requests sent per second (as the summary's `requests_per_s`): 0 while none was sent, even when
    items ended without one (a stopped batch)."""
    elapsed = stats.elapsed_s
    return stats.requests / elapsed if stats.requests and elapsed > 0 else 0.0


def _cost(stats: BatchStats) -> str:
    """`$0.0123`, or nothing while the cost is unknown."""
    return f"${stats.cost_usd:.4f}" if stats.cost_known else ""


PLAIN_INTERVAL_S = 10.0
"""Seconds between progress lines when stderr is not a terminal (nohup, CI, a log file)."""


def _is_tty(stream: object) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (ValueError, OSError):  # a closed stream
        return False


class PlainProgress:
    """Status lines on stderr: rewritten in place on a terminal, one plain line every 10 s otherwise
    (done/total, failures, rate, ETA). ``label`` starts each line (``"batch"``; ``holysheep bench`` shows
    ``"bench MODEL"``); ``clock`` is injectable for tests."""

    def __init__(self, stream: TextIO | None = None, interval: float | None = None, label: str = "batch", *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _is_tty(self.stream)
        self.interval = interval if interval is not None else (0.25 if self.tty else PLAIN_INTERVAL_S)
        self._clock = clock
        self._last = 0.0

    def start(self, stats: BatchStats) -> None:
        self._last = self._clock()

    def update(self, stats: BatchStats) -> None:
        now = self._clock()
        if now - self._last >= self.interval:
            self._last = now
            self._write(stats)

    def _write(self, stats: BatchStats, end: str = "") -> None:
        line = scrub(f"{self.label}: {describe(stats)}")  # the egress scrubber: a stop reason may quote a server
        self.stream.write(("\r" + line + "\x1b[K" + end) if self.tty else line + "\n")
        self.stream.flush()

    def close(self, stats: BatchStats) -> None:
        self._write(stats, end="\n")


class RichProgress:
    """A rich progress bar (done, failed, rate, ETA, tokens, cost) on stderr, named ``label``."""

    def __init__(self, label: str = "batch") -> None:
        try:
            from rich.console import Console
            from rich.markup import escape
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        except ImportError as exc:
            raise MissingExtraError("progress='rich' needs the rich package, which is not installed: "
                                    "pip install 'holysheep[cli]' (or pass progress='plain').") from exc

        self._progress = Progress(
            TextColumn(f"[bold]{escape(label)}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"), TextColumn("{task.fields[rate]} req/s"),
            TimeRemainingColumn(), TextColumn("{task.fields[tokens]} tok"), TextColumn("{task.fields[cost]}"),
            console=Console(stderr=True), refresh_per_second=4,
        )
        self._task: Any = None
        self._last = 0.0

    def start(self, stats: BatchStats) -> None:
        self._progress.start()
        self._task = self._progress.add_task("batch", total=stats.total, failed=0, rate="0.0", tokens=0, cost="")

    def update(self, stats: BatchStats, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        self._progress.update(self._task, completed=stats.done, total=stats.total, failed=stats.failed,
                              rate=f"{_request_rate(stats):.1f}", tokens=f"{stats.tokens:,}",
                              cost=_cost(stats))

    def close(self, stats: BatchStats) -> None:
        if self._task is not None:
            self.update(stats, force=True)
        self._progress.stop()


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython with a kernel), where stderr is not a terminal either."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    get: Any = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _has_ipywidgets() -> bool:
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


class NotebookProgress:
    """A progress bar in a notebook without ipywidgets: an HTML ``<progress>`` element and the status line,
    updated in place through IPython's display (``text/plain`` carries the line for other front ends)."""

    def __init__(self, label: str = "batch", interval: float = 0.5, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        from IPython.display import display

        self._display: Any = display
        self.label = label
        self.interval = interval
        self._clock = clock
        self._last = 0.0
        self._handle: Any = None

    def _bundle(self, stats: BatchStats) -> dict[str, str]:
        import html

        line = scrub(f"{self.label}: {describe(stats)}")  # the egress scrubber: a stop reason may quote a server
        total = stats.total if stats.total else max(stats.done, 1)
        bar = (f'<progress value="{stats.done}" max="{total}" style="width:40ch"></progress> '
               f"<code>{html.escape(line)}</code>")
        return {"text/html": bar, "text/plain": line}

    def start(self, stats: BatchStats) -> None:
        self._last = self._clock()
        self._handle = self._display(self._bundle(stats), raw=True, display_id=True)

    def update(self, stats: BatchStats) -> None:
        now = self._clock()
        if now - self._last >= self.interval and self._handle is not None:
            self._last = now
            self._handle.update(self._bundle(stats), raw=True)

    def close(self, stats: BatchStats) -> None:
        if self._handle is not None:
            self._handle.update(self._bundle(stats), raw=True)


def make_progress(progress: Any, label: str = "batch") -> ProgressReporter | None:
    """``True`` → a rich bar on a terminal, plain lines every 10 s when stderr is not one (nohup, CI, a log),
    an HTML bar in a notebook without ipywidgets; ``"plain"``/``"rich"`` force one; an object is used as is.
    ``label`` names the run in the bar or line."""
    if progress is None or progress is False:
        return None
    if progress is True and _in_notebook():
        if not _has_ipywidgets():  # rich would only warn "install ipywidgets" and show nothing
            return NotebookProgress(label)
    elif progress is True and not _is_tty(sys.stderr):
        return PlainProgress(label=label)
    if progress is True or progress == "rich":
        try:
            return RichProgress(label)
        except MissingExtraError:
            if progress == "rich":
                raise
            return PlainProgress(label=label)
    if progress == "plain":
        return PlainProgress(label=label)
    if all(hasattr(progress, name) for name in ("start", "update", "close")):
        reporter: ProgressReporter = progress
        return reporter
    raise TypeError(f"progress must be True/False, 'rich', 'plain' or a reporter object, got {progress!r}")


class _WithTotal:
    """A reporter that shows `total` (the number of lines a JSONL run sends) when the batch cannot know it."""

    def __init__(self, inner: ProgressReporter, total: int) -> None:
        self.inner, self.total = inner, total

    def start(self, stats: BatchStats) -> None:
        if stats.total is None:
            stats.total = self.total
        self.inner.start(stats)

    def update(self, stats: BatchStats) -> None:
        self.inner.update(stats)

    def close(self, stats: BatchStats) -> None:
        self.inner.close(stats)


def with_total(reporter: ProgressReporter, total: int) -> ProgressReporter:
    """`reporter`, told that the batch has `total` items when the batch itself reads a lazy input."""
    return _WithTotal(reporter, total)

"""Python's cyclic garbage collector, collecting less often while a batch runs.

A batch keeps every result it returns: each ``ChatCompletion`` is about 19 objects the collector tracks
(pydantic models, their ``__dict__``, field sets and extras), while hundreds of requests are in flight.
With CPython's default young-generation threshold (700) the collector then runs every couple of dozen
items and walks the in-flight requests each time; at 256 in flight that was about a sixth of the
batch's wall time (``benchmarks/batch.py``). Reference counting still frees everything that is not in
a cycle at once; only cyclic garbage waits for the next (rarer) collection.

The threshold is process-wide, so this module treats it with care:

- it only ever *raises* the young-generation threshold (a higher one set by the application is kept),
  and leaves the older generations' thresholds alone;
- batches running at the same time (threads, tasks) share one change: the first to start makes it,
  the last to finish undoes it;
- it is undone only when the threshold is still the one set here: if the application changed it in
  the meantime, the application's value stays;
- a batch gives its share back when it finishes, fails, is closed, or when its last worker task ends
  (a loop shut down under an iterator nobody closed). Never from a finalizer: the lock here is never
  taken while the collector runs.

``gc_threshold=None`` (a batch option) leaves the collector alone.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["DEFAULT_GC_THRESHOLD", "GCScope"]

DEFAULT_GC_THRESHOLD = 10_000
"""The young-generation threshold while a batch runs (CPython's default is 700)."""

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None  # the thresholds before the first holder raised them
_ours: tuple[int, int, int] | None = None  # the thresholds set here (None: nothing was changed)


def _enter(threshold: int) -> None:
    global _holders, _saved, _ours
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        current = gc.get_threshold()
        if current[0] >= threshold:  # the application's own threshold is higher already
            _saved = _ours = None
            return
        _saved = (current[0], current[1], current[2])
        _ours = (threshold, current[1], current[2])
        gc.set_threshold(*_ours)


def _exit() -> None:
    global _holders, _saved, _ours
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders > 0:
            return
        if _saved is not None and gc.get_threshold() == _ours:  # untouched since: put the old value back
            gc.set_threshold(*_saved)
        _saved = _ours = None


class GCScope:
    """One batch's share of the raised threshold: `enter` when it starts, `exit` when it ends (both
    idempotent). ``threshold=None`` changes nothing."""

    __slots__ = ("_active", "threshold")

    def __init__(self, threshold: int | None) -> None:
        self.threshold = threshold
        self._active = False

    def enter(self) -> None:
        """Take a share (raises the threshold if this is the first batch running)."""
        if self.threshold is None or self._active:
            return
        self._active = True
        _enter(self.threshold)

    def exit(self) -> None:
        """Give the share back (the last batch to finish restores the threshold)."""
        if self._active:
            self._active = False
            _exit()

"""Which batch results mean "not finished, run it again later" rather than "failed".

A JSONL run writes no line for such an item, so `--resume` runs it. This is the one place that
decides it: a result flagged `unfinished` by the engine, a `BatchCancelledError`, any error whose
class (or a base class) is named like `...Unfinished...` or `...Stopped...` (the errors of a batch
stopped by an outage or a long pause), and an item the batch never sent because it stopped on a 401
or an exhausted quota.
"""

from __future__ import annotations

from typing import Any

from .._exceptions import APIStatusError
from ._results import BatchCancelledError

__all__ = ["is_unfinished"]


def is_unfinished(result: Any) -> bool:
    """True when `result` (a `BatchResult`) did not finish because the batch stopped."""
    flag = getattr(result, "unfinished", None)
    if isinstance(flag, bool) and flag:
        return True
    error = getattr(result, "error", None)
    if error is None:
        return False
    if isinstance(error, BatchCancelledError):
        return True
    if any("Unfinished" in cls.__name__ or "Stopped" in cls.__name__ for cls in type(error).__mro__):
        return True
    return (getattr(result, "attempts", 1) == 0 and isinstance(error, APIStatusError)
            and error.status_code in (401, 402, 429))

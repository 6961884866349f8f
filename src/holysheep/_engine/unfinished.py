"""Which batch results mean "not finished, run it again later" rather than "failed".

A JSONL run writes no line for such an item, so `--resume` runs it. This is the one place that
decides it, by the error's type: `BatchCancelledError` (Ctrl-C, a cancelled task), `BatchUnfinishedError`
(a batch stopped by an outage or a long pause), and an item the batch never sent because it stopped on a
401, an exhausted quota or a rate limit. Results are only judged here while the batch runs, as objects:
a JSONL output never holds an unfinished item, so nothing read back from a file is matched by name.
"""

from __future__ import annotations

from holysheep._engine.results import BatchCancelledError, BatchResult, BatchUnfinishedError
from holysheep._exceptions import APIStatusError

__all__ = ["is_unfinished"]


def is_unfinished(result: BatchResult) -> bool:
    """True when `result` did not finish because the batch stopped."""
    error = result.error
    if isinstance(error, (BatchCancelledError, BatchUnfinishedError)):
        return True
    return result.attempts == 0 and isinstance(error, APIStatusError) and error.status_code in (401, 402, 429)

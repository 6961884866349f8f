"""Batch inference: many chat completions with bounded concurrency, rate limits, batch-wide retries,
and resumable JSONL files.

Usually reached through ``client.chat.completions.batch(...)`` (sync), ``await
aclient.chat.completions.batch(...)`` and ``aclient.chat.completions.batch_iter(...)``; for files,
`run_jsonl` or ``holysheep batch IN.jsonl -o OUT.jsonl``. See ``docs/batch.md``.
"""

from __future__ import annotations

from ._jsonl import JsonlReport, arun_jsonl, run_jsonl
from ._progress import PlainProgress, ProgressReporter, RichProgress
from ._results import (
    BatchCancelledError,
    BatchFailedError,
    BatchInterrupted,
    BatchResult,
    BatchResults,
    BatchStats,
    BatchSummary,
)
from ._runner import BatchIterator, BatchOptions

__all__ = [
    "BatchCancelledError",
    "BatchFailedError",
    "BatchInterrupted",
    "BatchIterator",
    "BatchOptions",
    "BatchResult",
    "BatchResults",
    "BatchStats",
    "BatchSummary",
    "JsonlReport",
    "PlainProgress",
    "ProgressReporter",
    "RichProgress",
    "arun_jsonl",
    "run_jsonl",
]

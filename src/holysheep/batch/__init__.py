"""Batch inference: many chat completions with bounded concurrency, rate limits, batch-wide retries,
and resumable JSONL files.

Usually reached through ``client.chat.completions.batch(...)`` (sync), ``await
aclient.chat.completions.batch(...)`` and ``aclient.chat.completions.batch_iter(...)``; for files,
`run_jsonl` or ``holysheep batch IN.jsonl -o OUT.jsonl``. A dry run: `estimate` / `estimate_jsonl`
(``--dry-run``). See ``docs/batch.md`` and ``docs/spend.md``.
"""

from __future__ import annotations

from holysheep._engine.fd_limit import ensure_open_files
from holysheep._engine.iterator import BatchIterator, BatchOptions
from holysheep._engine.key_limits import forget_limits
from holysheep._engine.options import DEFAULTS
from holysheep._engine.progress import MissingExtraError, PlainProgress, ProgressReporter, RichProgress, make_progress
from holysheep._engine.results import (
    BatchCancelledError,
    BatchFailedError,
    BatchInterrupted,
    BatchResult,
    BatchResults,
    BatchStats,
    BatchSummary,
    BatchUnfinishedError,
)
from holysheep.batch._estimate import BatchEstimate, ModelEstimate, RefusedItem, estimate, estimate_jsonl
from holysheep.batch._jsonl import JsonlReport, arun_jsonl, run_jsonl
from holysheep.batch._jsonl_output import (
    OutputLockedError,
    OutputMismatchError,
    OutputNotResultsError,
    OutputPathError,
    OutputWriteError,
)

__all__ = [
    "BatchCancelledError",
    "BatchEstimate",
    "BatchFailedError",
    "BatchInterrupted",
    "BatchIterator",
    "BatchOptions",
    "BatchResult",
    "BatchResults",
    "BatchStats",
    "BatchSummary",
    "BatchUnfinishedError",
    "DEFAULTS",
    "JsonlReport",
    "MissingExtraError",
    "ModelEstimate",
    "OutputLockedError",
    "OutputWriteError",
    "OutputMismatchError",
    "OutputNotResultsError",
    "OutputPathError",
    "PlainProgress",
    "ProgressReporter",
    "RefusedItem",
    "RichProgress",
    "arun_jsonl",
    "ensure_open_files",
    "forget_limits",
    "make_progress",
    "estimate",
    "estimate_jsonl",
    "run_jsonl",
]

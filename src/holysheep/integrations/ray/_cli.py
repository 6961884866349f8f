"""`holysheep batch IN.jsonl -o OUT_DIR --ray [--replicas N]`: the JSONL job on a Ray cluster.

Joins the running cluster (`ray.init(address="auto")`) or starts a local one, reads the JSONL file as a
dataset (each line as the batch command reads it: prompt, messages or an OpenAI Batch API line), and
writes the result rows as JSON Lines files into OUT_DIR. `--resume` sends only the lines not already
answered in OUT_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["run_ray_batch"]


def _connect(ray: Any) -> None:
    if ray.is_initialized():
        return
    try:
        ray.init(address="auto", include_dashboard=False, log_to_driver=False)
    except ConnectionError:  # no cluster running: a local one
        ray.init(include_dashboard=False, log_to_driver=False)


def _json_safe(value: object) -> object:
    """NaN (what a pandas-based reader gives for a missing value) becomes null: JSON has no NaN."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _write_jsonl(results: Any, out_dir: Path) -> tuple[int, int]:
    """Stream the result rows into a new `results-<time>.jsonl` in `out_dir`; returns (rows, failed rows)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"results-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
    total = failed = 0
    with path.open("w", encoding="utf-8") as out:
        for table in results.iter_batches(batch_format="pyarrow", batch_size=1024):
            for row in table.to_pylist():
                out.write(json.dumps(_json_safe(row), ensure_ascii=False, default=str) + "\n")
                total += 1
                failed += row.get("error") is not None
    return total, failed


def run_ray_batch(args: argparse.Namespace, error: Callable[[str], None]) -> int:
    """Run the batch command's parsed `args` on Ray; returns the exit status (0 ok, 1 failures, 2 bad input).
    Every error goes to `error` (the CLI's one error line)."""
    from holysheep._exceptions import AuthenticationError, HolySheepError

    def fail(message: str, status: int = 2) -> int:
        error(message)
        return status

    if getattr(args, "schema", None) is not None or getattr(args, "max_repairs", None) is not None:
        return fail("--schema/--max-repairs do not run on Ray yet; run without --ray for structured output.")
    try:
        import ray
        import ray.data
    except ImportError:
        return fail("--ray needs Ray: pip install 'holysheep[ray]'")
    from holysheep.integrations.ray._processor import build_processor

    source, out_dir = Path(args.input), Path(args.output)
    if not source.is_file():
        return fail(f"input file {str(source)!r} does not exist.")
    if out_dir.exists() and not out_dir.is_dir():
        return fail(f"with --ray, -o names a folder; {str(out_dir)!r} is a file.")
    earlier = sorted(out_dir.glob("*.json*")) if out_dir.is_dir() else []
    if earlier and args.overwrite:
        for path in earlier:
            path.unlink()
        earlier = []
    if earlier and not args.resume:
        return fail(f"{str(out_dir)!r} already holds results; pass --resume to send only the missing lines, "
                    "or --overwrite to start again.")
    params: dict[str, Any] = {}
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    try:
        if args.max_retries is not None:  # unset: the processor's own per-row retry limit
            params["max_retries"] = args.max_retries
        processor = build_processor(  # rpm/tpm "auto" (the CLI's default): the cluster limiter learns them
            model=args.model, replicas=args.replicas, concurrency_per_replica=args.concurrency,
            rpm=None if args.rpm == "auto" else args.rpm, tpm=None if args.tpm == "auto" else args.tpm,
            base_url=args.base_url, skip_done=out_dir if earlier else None, _whole_row=True, **params)
        _connect(ray)
        results = processor(ray.data.read_json(str(source), lines=True))
        total, failed = _write_jsonl(results, out_dir)
    except AuthenticationError as exc:
        return fail(f"{exc}", 1)
    except HolySheepError as exc:
        return fail(f"{exc}")
    kept = f" (earlier results in {len(earlier)} file(s) kept)" if earlier else ""
    print(f"{total - failed} succeeded, {failed} failed; results in {out_dir}/{kept}", file=sys.stderr)
    return 0 if failed == 0 else 1

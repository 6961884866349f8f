"""`holysheep batch INPUT.jsonl -o OUTPUT.jsonl`: the command-line face of `holysheep.batch.run_jsonl`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_batch_parser", "build_parser", "run_batch_command"]

DESCRIPTION = """\
Run every chat request of a JSONL file and write one result line per input line.

Input lines are OpenAI Batch API lines ({"custom_id", "method", "url", "body"}) or create()
parameters ({"custom_id", "messages", ...}); a line without custom_id is called line-N.
With --resume, lines whose last result succeeded are skipped and the others (failures
included) run again; at the end the output holds one line per custom_id, in input order.

Exit status: 0 every line succeeded; 1 some lines failed or were not run; 2 bad arguments or
input (duplicate custom_ids, missing file, output exists without --resume, output written for
another input, output in use by another run); 130 interrupted (run again with --resume)."""


def _default_model() -> str:
    """The model `holysheep chat` and `bench` use when none is named (one definition, in the cli package)."""
    from holysheep.cli._chat import DEFAULT_MODEL

    return DEFAULT_MODEL


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="JSONL file of requests (OpenAI Batch API lines or create() params)")
    parser.add_argument("-o", "--output", required=True, help="JSONL file the results are appended to")
    parser.add_argument("--model", help=f"model for lines that do not name one (default {_default_model()})")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight at most (default 16)")
    parser.add_argument("--rpm", type=float, help="requests per minute limit")
    parser.add_argument("--tpm", type=float, help="tokens per minute limit (estimated, corrected by usage)")
    parser.add_argument("--max-tokens", type=int, help="max_tokens for lines that do not set it")
    parser.add_argument("--max-retries", type=int, default=5, help="retries per line (default 5)")
    parser.add_argument("--resume", action="store_true",
                        help="continue OUTPUT: skip lines that succeeded, run the rest again")
    parser.add_argument("--overwrite", action="store_true", help="empty the output file first")
    parser.add_argument("--require-quota", action="store_true",
                        help="fail before sending when the account quota cannot cover the estimate")
    parser.add_argument("--base-url", help="API base URL (default: HOLYSHEEP_BASE_URL or the HolySheep API)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--ray", action="store_true",
                        help="run on a Ray cluster (the running one, else a local one); -o is then a folder")
    parser.add_argument("--replicas", type=int, default=4, help="with --ray: replica actors (default 4)")
    parser.add_argument("--schema", help="structured output: module:Model or schema.json; each output line gets "
                                         "the validated object under \"parsed\"")
    parser.add_argument("--max-repairs", type=int, help="with --schema: re-ask up to N times when the reply "
                                                        "does not validate (default 0)")


def add_batch_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``batch`` sub-command to an ``argparse`` sub-parsers object; returns its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "batch", help="run a JSONL file of chat requests", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    parser.set_defaults(func=run_batch_command)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser (``python -m holysheep.batch``)."""
    parser = argparse.ArgumentParser(prog="python -m holysheep.batch", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return parser


def _structured_params(args: argparse.Namespace) -> dict[str, Any]:
    schema, repairs = getattr(args, "schema", None), getattr(args, "max_repairs", None)
    if schema is None:
        if repairs is not None:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError("--max-repairs needs --schema.", field="max_repairs")
        return {}
    from holysheep.batch._schema_arg import load_schema

    params: dict[str, Any] = {"response_format": load_schema(schema)}
    if repairs is not None:
        params["max_repairs"] = repairs
    return params


def run_batch_command(args: argparse.Namespace) -> int:
    """Run ``holysheep batch`` with parsed arguments; returns the exit status."""
    from holysheep import Client
    from holysheep._exceptions import HolySheepError, InvalidRequestError, QuotaExceededError, QuotaUnavailableError
    from holysheep.batch._jsonl import run_jsonl

    if getattr(args, "ray", False):
        from holysheep.integrations.ray._cli import run_ray_batch

        return run_ray_batch(args)
    try:
        client = Client(base_url=args.base_url, max_retries=0)
    except HolySheepError as exc:
        print(f"holysheep batch: {exc}", file=sys.stderr)
        return 2
    params: dict[str, Any] = {}
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    try:
        params.update(_structured_params(args))
        with client:
            report = run_jsonl(
                client, args.input, args.output, model=args.model or _default_model(), concurrency=args.concurrency,
                rpm=args.rpm, tpm=args.tpm, resume=args.resume, overwrite=args.overwrite, max_retries=args.max_retries,
                require_quota=args.require_quota, progress=not args.no_progress and not args.json, **params)
    except KeyboardInterrupt:
        print(f"\nholysheep batch: interrupted; finished lines are in {args.output}. "
              "Run again with --resume to continue.", file=sys.stderr)
        return 130
    except (InvalidRequestError, QuotaExceededError, QuotaUnavailableError) as exc:
        print(f"holysheep batch: {exc}", file=sys.stderr)
        return 2
    for lineno, message in report.bad_lines[:20]:
        print(f"holysheep batch: bad input line {lineno}: {message}", file=sys.stderr)
    if len(report.bad_lines) > 20:
        print(f"holysheep batch: ... and {len(report.bad_lines) - 20} more bad lines (see {args.output})",
              file=sys.stderr)
    if args.json:
        data = report.to_dict()
        print(json.dumps(data, default=str))
    else:
        print(f"{report.succeeded} succeeded, {report.failed} failed, {report.skipped} skipped (already done), "
              f"{report.rerun} re-run (failed before), {report.not_run} not run; results in {args.output}",
              file=sys.stderr)
        if report.summary is not None:
            print(str(report.summary), file=sys.stderr)
        if report.not_run:
            print(f"holysheep batch: stopped ({report.summary.stop_reason if report.summary else '?'}); "
                  "fix the cause and run again with --resume.", file=sys.stderr)
    return 0 if report.ok else 1

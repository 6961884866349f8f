"""`holysheep batch INPUT.jsonl -o OUTPUT.jsonl`: the command-line face of `holysheep.batch.run_jsonl` (its
flags: `holysheep.cli._batch_parser`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from holysheep.cli._batch_flags import unhonoured_flags
from holysheep.cli._batch_params import close_cache, spend_params, structured_params
from holysheep.cli._batch_parser import default_model
from holysheep.cli._batch_signals import StopSignal, cli_warnings, stop_signals

__all__ = ["done_line", "run_batch_command"]


def _dry_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    from holysheep.batch._estimate import estimate_jsonl

    spend = {k: params.pop(k) for k in ("max_cost_usd", "prices") if k in params}
    est = estimate_jsonl(args.input, output_path=args.output, resume=args.resume, model=args.model or default_model(),
                         rpm=None if args.rpm == "auto" else args.rpm,  # "auto": the remembered limits, if any
                         tpm=None if args.tpm == "auto" else args.tpm, **spend, **params)
    if args.json:
        print(json.dumps(est.to_dict(), default=str))
    else:
        from holysheep.cli._words import cli_words

        print(cli_words(str(est)))  # the report is the output (`> file` keeps it), in the CLI's words
    return 0


def run_batch_command(args: argparse.Namespace) -> int:
    """Run ``holysheep batch`` with parsed arguments; returns the exit status. ``-`` is stdin / stdout."""
    from holysheep.cli._batch_std import run_with_std_streams
    from holysheep.cli._output import command_named

    with command_named("batch"):
        return run_with_std_streams(args, _run_batch)


def _run_batch(args: argparse.Namespace) -> int:
    from holysheep import Client
    from holysheep._exceptions import HolySheepError, InvalidRequestError, QuotaExceededError, QuotaUnavailableError
    from holysheep.batch._jsonl import run_jsonl
    from holysheep.batch._jsonl_output import OutputWriteError
    from holysheep.cli._output import error, message_for, warning

    if not args.output and not getattr(args, "dry_run", False):
        error("-o/--output OUTPUT.jsonl is required (except with --dry-run).")
        return 2
    unhonoured = unhonoured_flags(args)
    if unhonoured:
        names = ", ".join(unhonoured)
        if getattr(args, "ray", False):
            error(f"{names} cannot be used with --ray yet (the Ray front-end does not honour "
                  f"{'it' if len(unhonoured) == 1 else 'them'}); run without --ray, or drop {names}.")
        else:
            error(f"{names} needs --ray.")
        return 2
    if getattr(args, "ray", False):
        from holysheep.integrations.ray._cli import run_ray_batch

        return run_ray_batch(args, error)
    if getattr(args, "no_quota_check", False) and args.require_quota:
        error("--no-quota-check and --require-quota contradict each other: drop one.")
        return 2
    params: dict[str, object] = {}
    if getattr(args, "no_quota_check", False):
        params["check_quota"] = False
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    if getattr(args, "dry_run", False):  # no key needed: nothing is sent
        try:
            params.update(structured_params(args))
            params.update(spend_params(args, cache=False))  # a dry run writes nothing, not even a cache file
            return _dry_run(args, params)
        except InvalidRequestError as exc:
            error(str(exc))
            return 2
    try:
        client = Client(base_url=args.base_url, max_retries=0, proxy=getattr(args, "proxy", None),
                        allow_insecure_http=args.allow_insecure_http)
    except HolySheepError as exc:
        error(message_for(exc))
        return 2
    try:  # the client and the cache are closed on every path (an error, a signal, any exception)
        with client:
            params.update(structured_params(args))
            from pathlib import Path

            from holysheep.batch._output_files import output_target

            output_target(Path(args.output))  # -o /dev/null, a FIFO, a device link: exit 2 before anything opens
            if args.cache is not None:  # before the cache file is opened (or created)
                from holysheep.batch._jsonl_input import check_cache_path

                check_cache_path(args.cache, Path(args.output))
            params.update(spend_params(args))
            with stop_signals(), cli_warnings():
                report = run_jsonl(
                    client, args.input, args.output, model=args.model or default_model(),
                    concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm, resume=args.resume,
                    overwrite=args.overwrite, max_retries=args.max_retries, rerun_changed=args.rerun_changed,
                    retry_window_s=args.retry_window_s, output_format=args.output_format,
                    outage_after_s=args.outage_after_s, outage_failure_ratio=args.outage_failure_ratio,
                    max_pause_s=args.max_pause_s,
                    require_quota=args.require_quota, progress=not args.no_progress and not args.json, **params)
    except KeyboardInterrupt as exc:
        what = f"stopped by {exc.signal_name}" if isinstance(exc, StopSignal) else "interrupted"
        where = getattr(args, "output_label", None) or args.output
        print(file=sys.stderr)
        error(f"{what}; finished lines are in {where}. Run again with --resume to continue.")
        return exc.exit_status if isinstance(exc, StopSignal) else 130
    except (InvalidRequestError, QuotaExceededError, QuotaUnavailableError) as exc:
        error(str(exc))
        return 2
    except OutputWriteError as exc:  # a full disk: not bad input (exit 1), and --resume continues
        error(str(exc))
        return 1
    finally:
        close_cache(params)
    for lineno, message in report.bad_lines[:20]:
        error(f"bad input line {lineno}: {message}", translate=False)
    if len(report.bad_lines) > 20:
        error(f"... and {len(report.bad_lines) - 20} more bad lines (see {args.output})")
    if args.output_format == "openai":  # its lines carry the server's error: the SDK's explanation goes here
        for cid, message in report.errors:
            error(f"{cid} failed: {message}", translate=False)
    if args.json:
        data = report.to_dict()
        print(json.dumps(data, default=str))
    print(done_line(report, getattr(args, "output_label", None)), file=sys.stderr)
    if not args.json:
        if report.summary is not None:
            print("\n".join(str(report.summary).splitlines()[1:]), file=sys.stderr)
        if report.compaction_error:
            warning(f"{report.compaction_error}.")
        if report.not_run:
            reason = report.summary.stop_reason if report.summary else None
            hint = ("run again with --resume (with a new --max-cost, or none) to finish the rest"
                    if reason and reason.startswith("max_cost_usd=") else "fix the cause and run again with --resume")
            error(f"stopped ({reason or '?'}); {hint}.")
    return 0 if report.ok else 1


def done_line(report: Any, where: str | None = None) -> str:
    """``1000/1000 done (176 from an earlier run), 0 failed, 0 not run; results in OUT`` for a JSONL report
    (``where``: how to name the output, e.g. ``stdout``)."""
    done = report.skipped + report.succeeded + report.failed
    earlier = f" ({report.skipped:,} from an earlier run)" if report.skipped else ""
    rerun = f" ({report.rerun:,} ran again after failing before)" if report.rerun else ""
    return (f"{done:,}/{report.lines:,} done{earlier}, {report.failed:,} failed{rerun}, {report.not_run:,} not run; "
            f"results in {where or report.output_path}")

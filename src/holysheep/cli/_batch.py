"""`holysheep batch INPUT.jsonl -o OUTPUT.jsonl`: the command-line face of `holysheep.batch.run_jsonl`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from holysheep.cli._batch_flags import FLAG_SCOPES, LOCAL, RAY

__all__ = ["add_batch_parser", "build_parser", "run_batch_command"]

DESCRIPTION = """\
Run every chat request of a JSONL file and write one result line per input line.

Input lines are OpenAI Batch API lines ({"custom_id", "method", "url", "body"}) or create()
parameters ({"custom_id", "messages", ...}); a line without custom_id is called line-N.
With --resume, lines whose last result succeeded are skipped and the others (failures
included) run again; at the end the output holds one line per custom_id, in input order.

Spend: --dry-run reports what the run would send and cost (nothing is sent or written);
--max-cost USD stops before the spend could pass USD (resumable: run again with --resume);
--cache FILE answers repeated requests from a response cache. See docs/spend.md.

Exit status: 0 every line succeeded; 1 some lines failed or were not run (a --max-cost stop
included); 2 bad arguments or
input (duplicate custom_ids, missing file, output exists without --resume, output written for
another input, --resume on a file that is not a results file or in another --output-format,
--cache naming the output file, output in use by another run); 130 interrupted by Ctrl-C, 143 stopped by SIGTERM,
129 stopped by SIGHUP (finished lines are kept and the lock removed: run again with --resume)."""


def unhonoured_flags(args: argparse.Namespace) -> list[str]:
    """The flags set (away from their defaults) that the chosen front-end (``--ray`` or not) cannot honour."""
    defaults: dict[str, object] = getattr(args, "batch_defaults", {})
    other = LOCAL if getattr(args, "ray", False) else RAY
    return [flag for dest, (flag, scope) in FLAG_SCOPES.items()
            if scope == other and dest in defaults and getattr(args, dest, defaults[dest]) != defaults[dest]]


def _limit(text: str) -> float | str | None:
    """``--rpm``/``--tpm``: a positive number, ``auto`` or ``off``."""
    value = text.strip().lower()
    if value == "auto":
        return "auto"
    if value in ("off", "none"):
        return None
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, 'auto' or 'off', got {text!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return number


def _default_model() -> str:
    """The model `holysheep chat` and `bench` use when none is named (one definition, in the cli package)."""
    from holysheep.cli._chat import DEFAULT_MODEL

    return DEFAULT_MODEL


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    from holysheep._core.batch_params import DEFAULT_CONCURRENCY, DEFAULT_RETRY_WINDOW_S  # the API's defaults
    from holysheep.cli._common import number, whole
    from holysheep.cli._connection_flags import CONNECTION_OPTIONS

    parser.add_argument("input", help="JSONL file of requests (OpenAI Batch API lines or create() params); "
                                      "- reads stdin")
    parser.add_argument("-o", "--output", help="JSONL file the results are appended to (required, except with "
                                                "--dry-run); - writes them to stdout")
    parser.add_argument("--model", help=f"model for lines that do not name one (default {_default_model()})")
    parser.add_argument("--concurrency", type=whole(1), default=DEFAULT_CONCURRENCY,
                        help=f"requests in flight at most (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--rpm", type=_limit, default="auto",
                        help="requests per minute: a number, 'auto' (the default: follow the server's "
                             "x-ratelimit-* headers) or 'off'")
    parser.add_argument("--tpm", type=_limit, default="auto",
                        help="tokens per minute (estimated, corrected by usage): a number, 'auto' (default) or 'off'")
    parser.add_argument("--max-tokens", type=whole(1), help="max_tokens for lines that do not set it")
    parser.add_argument("--max-retries", type=whole(0), default=None,
                        help="retries per line for 5xx, connection errors and timeouts (default: until the line "
                             "succeeds, the batch stops on an outage, or --retry-window-s passes; 429s never count)")
    parser.add_argument("--retry-window-s", type=number(positive=False), default=DEFAULT_RETRY_WINDOW_S,
                        help="a line failing this long after its first attempt ends with its error "
                             f"(default {DEFAULT_RETRY_WINDOW_S:g})")
    parser.add_argument("--output-format", choices=("holysheep", "openai"), default="holysheep",
                        help="result lines: holysheep's (default) or OpenAI Batch output lines "
                             "({id, custom_id, response: {status_code, request_id, body}, error})")
    parser.add_argument("--resume", action="store_true",
                        help="continue OUTPUT: skip lines that succeeded, run the rest again")
    parser.add_argument("--rerun-changed", action="store_true",
                        help="with --resume: send again the lines changed since their results were written "
                             "(their old results are replaced)")
    parser.add_argument("--overwrite", action="store_true", help="empty the output file first")
    parser.add_argument("--require-quota", action="store_true",
                        help="fail before sending when the account quota cannot cover the estimate")
    parser.add_argument("--no-quota-check", action="store_true",
                        help="skip the account quota check (servers without GET /quota)")
    parser.add_argument("--base-url", help="API base URL (default: HOLYSHEEP_BASE_URL or the HolySheep API)")
    parser.add_argument("--allow-insecure-http", **dict(CONNECTION_OPTIONS)["--allow-insecure-http"])
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--ray", action="store_true",
                        help="run on a Ray cluster (the running one, else a local one); -o is then a folder")
    parser.add_argument("--replicas", type=whole(1), default=4, help="with --ray: replica actors (default 4)")
    parser.add_argument("--schema", help="structured output: module:Model or schema.json; each output line gets "
                                         "the validated object under \"parsed\"")
    parser.add_argument("--max-repairs", type=whole(0), help="with --schema: re-ask up to N times when the reply "
                                                        "does not validate (default 0)")
    parser.add_argument("--max-cost", type=number(positive=False), metavar="USD",
                        help="stop before this run's spend could pass USD (each request's worst case is reserved "
                             "first); unsent lines are left for --resume")
    parser.add_argument("--price", action="append", default=[], metavar="MODEL=IN,OUT",
                        help="USD per million input and output tokens for a model the price catalog lacks "
                             "(repeatable)")
    parser.add_argument("--dry-run", action="store_true",
                        help="send nothing, write nothing: report items, tokens, cost range, wall time and the "
                             "lines that would be refused")
    parser.add_argument("--cache", metavar="FILE", help="response cache file (SQLite): repeated requests are "
                                                        "answered from it without a request")
    parser.add_argument("--cache-ttl", type=number(positive=False), metavar="SECONDS",
                        help="with --cache: entries older than this are misses")
    parser.add_argument("--cache-max-mb", type=number(positive=True), metavar="MB",
                        help="with --cache: the oldest entries go when the file's responses pass MB")
    parser.set_defaults(batch_defaults={a.dest: a.default for a in parser._actions if a.dest != "help"})


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


def _structured_params(args: argparse.Namespace) -> dict[str, object]:
    schema, repairs = getattr(args, "schema", None), getattr(args, "max_repairs", None)
    if schema is None:
        if repairs is not None:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError("--max-repairs needs --schema.", field="max_repairs")
        return {}
    from holysheep.batch._schema_arg import load_schema

    params: dict[str, object] = {"response_format": load_schema(schema)}
    if repairs is not None:
        params["max_repairs"] = repairs
    return params


def _prices(args: argparse.Namespace) -> dict[str, tuple[float, float]] | None:
    """``--price MODEL=IN,OUT`` flags as ``prices=``."""
    from holysheep._exceptions import InvalidRequestError

    prices: dict[str, tuple[float, float]] = {}
    for flag in getattr(args, "price", None) or []:
        model, _, rest = flag.rpartition("=")
        parts = rest.split(",")
        try:
            if not model or len(parts) != 2:
                raise ValueError
            prices[model] = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise InvalidRequestError(f"--price must be MODEL=IN,OUT in USD per million tokens (e.g. "
                                      f"--price my-model=0.5,1.5), got {flag!r}.", field="price") from None
    return prices or None


def _spend_params(args: argparse.Namespace, *, cache: bool = True) -> dict[str, object]:
    """``--max-cost``, ``--price`` and ``--cache*`` as batch parameters (``cache=False``: the cache flags are
    checked but no file is opened)."""
    from holysheep._exceptions import InvalidRequestError

    params: dict[str, object] = {}
    if getattr(args, "max_cost", None) is not None:
        params["max_cost_usd"] = args.max_cost
    prices = _prices(args)
    if prices:
        params["prices"] = prices
    path = getattr(args, "cache", None)
    ttl, max_mb = getattr(args, "cache_ttl", None), getattr(args, "cache_max_mb", None)
    if path is None and (ttl is not None or max_mb is not None):
        raise InvalidRequestError("--cache-ttl and --cache-max-mb need --cache FILE.", field="cache")
    if max_mb is not None and not max_mb > 0:
        raise InvalidRequestError(f"--cache-max-mb must be a positive number, got {max_mb!r}.", field="cache")
    if path is not None and cache:
        from holysheep.cache import open_cache

        params["cache"] = open_cache(path, ttl_s=ttl, max_bytes=int(max_mb * 2**20) if max_mb else None)
    return params


def _close_cache(params: dict[str, Any]) -> None:
    cache = params.get("cache")
    if cache is not None:
        cache.close()


def _dry_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    from holysheep.batch._estimate import estimate_jsonl

    spend = {k: params.pop(k) for k in ("max_cost_usd", "prices") if k in params}
    est = estimate_jsonl(args.input, output_path=args.output, resume=args.resume, model=args.model or _default_model(),
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
            params.update(_structured_params(args))
            params.update(_spend_params(args, cache=False))  # a dry run writes nothing, not even a cache file
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
    try:
        params.update(_structured_params(args))
        if args.cache is not None:  # before the cache file is opened (or created)
            from pathlib import Path

            from holysheep.batch._jsonl_input import check_cache_path

            check_cache_path(args.cache, Path(args.output))
        params.update(_spend_params(args))
        with client, _stop_signals(), _cli_warnings():
            report = run_jsonl(
                client, args.input, args.output, model=args.model or _default_model(), concurrency=args.concurrency,
                rpm=args.rpm, tpm=args.tpm, resume=args.resume, overwrite=args.overwrite, max_retries=args.max_retries,
                rerun_changed=args.rerun_changed,
                retry_window_s=args.retry_window_s, output_format=args.output_format,
                require_quota=args.require_quota, progress=not args.no_progress and not args.json, **params)
    except KeyboardInterrupt as exc:
        _close_cache(params)
        what = f"stopped by {exc.signal_name}" if isinstance(exc, StopSignal) else "interrupted"
        where = getattr(args, "output_label", None) or args.output
        print(file=sys.stderr)
        error(f"{what}; finished lines are in {where}. Run again with --resume to continue.")
        return exc.exit_status if isinstance(exc, StopSignal) else 130
    except (InvalidRequestError, QuotaExceededError, QuotaUnavailableError) as exc:
        _close_cache(params)
        error(str(exc))
        return 2
    except OutputWriteError as exc:  # a full disk: not bad input (exit 1), and --resume continues
        _close_cache(params)
        error(str(exc))
        return 1
    _close_cache(params)
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


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so the batch stops as on Ctrl-C (flush, unlock, resume)."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signum)
        self.signal_name = signal.Signals(signum).name
        self.exit_status = 128 + signum


@contextlib.contextmanager
def _cli_warnings() -> Iterator[None]:
    """While the run lasts, the batch's log warnings (a skipped quota check) print as the CLI's warning lines,
    in the CLI's words: ``Pass check_quota=False`` reads ``--no-quota-check``."""
    import logging

    from holysheep.cli._output import warning

    class _CliWarnings(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warning(record.getMessage())

    logger, handler = logging.getLogger("holysheep.batch"), _CliWarnings(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    """SIGTERM (docker stop, `timeout`, Kubernetes) and SIGHUP (a closed terminal) stop the run like Ctrl-C;
    a second one while it winds down is ignored. Exit status 128 + the signal: 143 and 129."""
    import signal
    import threading

    names = [n for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread() or not names:
        yield
        return
    sigs = [getattr(signal, n) for n in names]

    def handler(signum: int, frame: object) -> None:
        for sig in sigs:
            signal.signal(sig, signal.SIG_IGN)
        raise StopSignal(signum)

    previous = {sig: signal.signal(sig, handler) for sig in sigs}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)

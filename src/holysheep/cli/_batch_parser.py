"""The flags of `holysheep batch` (where each is honoured: `holysheep.cli._batch_flags`) and its help."""

from __future__ import annotations

import argparse

__all__ = ["DESCRIPTION", "add_batch_parser", "build_parser", "default_model"]

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


def default_model() -> str:
    """The model `holysheep chat` and `bench` use when none is named (one definition, in the cli package)."""
    from holysheep.cli._chat import DEFAULT_MODEL

    return DEFAULT_MODEL


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    from holysheep._core.batch_params import DEFAULT_CONCURRENCY, DEFAULT_RETRY_WINDOW_S  # the API's defaults
    from holysheep._engine.options import DEFAULTS
    from holysheep.cli._common import number, whole
    from holysheep.cli._connection_flags import CONNECTION_OPTIONS

    parser.add_argument("input", help="JSONL file of requests (OpenAI Batch API lines or create() params); "
                                      "- reads stdin")
    parser.add_argument("-o", "--output", help="JSONL file the results are appended to (required, except with "
                                                "--dry-run); - writes them to stdout")
    parser.add_argument("--model", help=f"model for lines that do not name one (default {default_model()})")
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
    stops = DEFAULTS["outage_after_s"], DEFAULTS["outage_failure_ratio"], DEFAULTS["max_pause_s"]
    parser.add_argument("--outage-after-s", type=number(positive=False), default=stops[0], metavar="SECONDS",
                        help=f"stop the batch (resumable) when nothing succeeded for this long (default {stops[0]:g})")
    parser.add_argument("--outage-failure-ratio", type=number(positive=True, at_most=1), default=stops[1],
                        metavar="SHARE",
                        help="stop the batch (resumable) when this share of the recent attempts failed, in (0, 1] "
                             f"(default {stops[1]:g})")
    parser.add_argument("--max-pause-s", type=number(positive=False), default=stops[2], metavar="SECONDS",
                        help="the longest pause of the whole batch for a server's Retry-After; a longer one stops "
                             f"the batch (resumable) (default {stops[2]:g})")
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


def add_batch_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``batch`` sub-command to an ``argparse`` sub-parsers object; returns its parser (the caller sets
    its ``func``: `holysheep.cli._batch.run_batch_command`)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "batch", help="run a JSONL file of chat requests", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser (``python -m holysheep.batch``)."""
    parser = argparse.ArgumentParser(prog="python -m holysheep.batch", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return parser

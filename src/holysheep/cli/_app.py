"""The ``holysheep`` argument tree and the one place that turns exceptions into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from holysheep.cli._common import add_connection_options
from holysheep.cli._connection_flags import CONNECTION_OPTIONS, JSON_OPTION
from holysheep.cli._output import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    api_key_in_use,
    error,
    exit_code_for,
    message_for,
    scrubbed_std_streams,
    set_command,
)

__all__ = ["build_parser", "run"]

_EPILOG = """exit status: 0 ok, 1 API error, 2 usage error, 130 interrupted.
environment: HOLYSHEEP_API_KEY, HOLYSHEEP_BASE_URL. Docs: {docs}"""
DOCS_URL = "https://holysheep.readthedocs.io"  # pyproject's [project.urls] Documentation, when metadata is absent


def docs_url() -> str:
    """The docs site: the installed distribution's ``Documentation`` project URL (pyproject ``[project.urls]``)."""
    from importlib import metadata

    try:
        urls = metadata.metadata("holysheep").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return DOCS_URL
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return str(url).strip()
    return DOCS_URL


class _Parser(argparse.ArgumentParser):
    """argparse with one ``holysheep <command>: error: ...`` line (exit 2) instead of usage plus message."""

    def error(self, message: str) -> NoReturn:
        set_command(self.prog.partition(" ")[2] or None)  # `holysheep batch`: the sub-command's parser
        error(f"{message} (see '{self.prog} --help')")
        raise SystemExit(EXIT_USAGE)


def _missing_batch(args: argparse.Namespace) -> int:
    error("the batch command is not available in this installation (holysheep.batch is missing); "
          "reinstall holysheep")
    return EXIT_USAGE


def _add_batch(sub: Any) -> None:
    try:
        from holysheep.cli._batch import run_batch_command
        from holysheep.cli._batch_parser import add_batch_parser
    except ImportError:
        p = sub.add_parser("batch", help="run a JSONL file of chat requests (not available)", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=_missing_batch)
        return
    p = add_batch_parser(sub)
    p.set_defaults(func=lambda args: _run_batch(run_batch_command, args))


def _run_batch(command: Any, args: argparse.Namespace) -> int:
    # The batch command builds its own Client from the environment; hand it a global --api-key that way, for
    # this command only (an in-process caller of `main`, a notebook or a test, keeps its own environment).
    if args.api_key is None:
        code: int = command(args)
        return code
    before = os.environ.get("HOLYSHEEP_API_KEY")
    os.environ["HOLYSHEEP_API_KEY"] = args.api_key
    try:
        code = command(args)
    finally:
        if before is None:
            os.environ.pop("HOLYSHEEP_API_KEY", None)
        else:
            os.environ["HOLYSHEEP_API_KEY"] = before
    return code


def build_parser() -> argparse.ArgumentParser:
    """The full ``holysheep`` parser. Global options may also be given after the sub-command."""
    from holysheep._version import __version__
    from holysheep.cli._account import add_account_parsers
    from holysheep.cli._bench import add_bench_parser
    from holysheep.cli._cache import add_cache_parser
    from holysheep.cli._chat import add_chat_parser
    from holysheep.cli._local import add_local_parsers

    parser = _Parser(prog="holysheep", description="HolySheep inference API from the shell.",
                     epilog=_EPILOG.format(docs=docs_url()),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"holysheep {__version__}")
    for flag, kwargs in (*CONNECTION_OPTIONS, JSON_OPTION):
        parser.add_argument(flag, dest="g_" + flag[2:].replace("-", "_"), **kwargs)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_chat_parser(sub)
    add_account_parsers(sub)
    _add_batch(sub)
    add_local_parsers(sub)
    add_bench_parser(sub)
    add_cache_parser(sub)
    for name, command in sub.choices.items():  # every sub-command takes the global options after its name too
        add_connection_options(command, listed=name not in OFFLINE_COMMANDS)
    return parser


OFFLINE_COMMANDS = frozenset({"plan", "gpus", "mock-server"})
"""Commands that send no request: their help lists no connection options (`CONNECTION_OPTIONS`; still
accepted)."""


def _merge_globals(args: argparse.Namespace) -> None:
    for name in ("api_key", "base_url", "proxy"):
        if getattr(args, name, None) is None:
            setattr(args, name, getattr(args, f"g_{name}"))
    for flag in ("json", "allow_insecure_http"):
        setattr(args, flag, bool(getattr(args, flag, None) or getattr(args, f"g_{flag}")))


def run(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status and never shows a traceback. Everything
    it prints passes the egress scrubber (`scrubbed_std_streams`)."""
    with scrubbed_std_streams():
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    set_command(None)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        set_command(args.command)
        _use_flags(parser, args.command)
        _merge_globals(args)
        api_key_in_use(args.api_key)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        code: int = args.func(args)
        return code
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `holysheep models | head`
        _silence_stdout()
        return 0
    except Exception as exc:
        from holysheep._exceptions import HolySheepError

        if isinstance(exc, HolySheepError | OSError):
            error(message_for(exc))
            return exit_code_for(exc)
        if os.environ.get("HOLYSHEEP_DEBUG"):
            raise
        error(f"unexpected {type(exc).__name__}: {exc}. Set HOLYSHEEP_DEBUG=1 for the traceback and report it.")
        return 1


def _use_flags(parser: argparse.ArgumentParser, command: str | None) -> None:
    """Errors name the running command's flags (`holysheep.cli._words`), read from its own parser."""
    from holysheep.cli._words import use_flags_of

    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    choices: dict[str, argparse.ArgumentParser] = subparsers[0].choices if subparsers else {}
    use_flags_of(choices.get(command) if command else None)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

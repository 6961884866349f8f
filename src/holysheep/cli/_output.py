"""Terminal output for the CLI: one-line errors, exit codes, JSON, and tables (rich when available)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any

__all__ = [
    "EXIT_API",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "api_key_in_use",
    "command_named",
    "error",
    "exit_code_for",
    "message_for",
    "print_json",
    "prefix",
    "print_table",
    "scrub",
    "scrubbed_std_streams",
    "set_command",
    "unscrubbed_std_streams",
    "use_rich",
    "warning",
]

EXIT_OK, EXIT_API, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ENV_API_KEY = "HOLYSHEEP_API_KEY"

_secret: str | None = None


def api_key_in_use(key: str | None) -> None:
    """Remember the key this run uses, so that everything printed afterwards is scrubbed of it."""
    global _secret
    _secret = key if key is not None else (os.environ.get(ENV_API_KEY) or None)


def scrub(text: str) -> str:
    """``text`` with the key, any 8-character piece of it, and anything shaped like a key masked."""
    from holysheep._core.keys import redact
    from holysheep._egress import scrub as egress_scrub

    key = _secret
    text = egress_scrub(redact(text, key))
    if key and len(key) >= 8:
        for i in range(len(key) - 7):
            piece = key[i : i + 8]
            if piece in text:
                text = text.replace(piece, "…")
    return text


MAX_HELD = 4096
"""The most of a word ``_ScrubbedStream`` holds back (a key is far shorter)."""


class _ScrubbedStream:
    """A text stream whose every write passes `scrub` (the key of the run, pieces of it, and every key the
    egress scrubber knows); everything else is the wrapped stream's.

    With ``hold``, the word being written (the text after the last whitespace) is held back until the next
    whitespace or `release`: a key a server split across two streamed deltas is scrubbed whole."""

    def __init__(self, stream: Any, *, hold: bool = False) -> None:
        self._stream = stream
        self._hold = hold
        self._held = ""

    def write(self, text: str) -> int:
        data = self._held + text
        cut = len(data)
        if self._hold:
            while cut > 0 and not data[cut - 1].isspace():
                cut -= 1
            if len(data) - cut > MAX_HELD:
                cut = len(data)
        out, self._held = data[:cut], data[cut:]
        if out:
            self._stream.write(scrub(out))
        return len(text)

    def writelines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.write(line)

    def release(self) -> None:
        """Write what is held back."""
        held, self._held = self._held, ""
        if held:
            self._stream.write(scrub(held))
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def scrubbed_std_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` scrubbed for the time of one command: every print, progress line,
    table or summary of any command passes the scrubber, including one added later. Standard output holds
    back the word being written (see `_ScrubbedStream`), so a streamed reply cannot split a key past it."""
    out, err = sys.stdout, sys.stderr
    scrubbed_out = _ScrubbedStream(out, hold=True)
    sys.stdout, sys.stderr = scrubbed_out, _ScrubbedStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`holysheep chat | head`)
            scrubbed_out.release()


@contextlib.contextmanager
def unscrubbed_std_streams() -> Iterator[None]:
    """The real ``sys.stdout`` / ``sys.stderr`` again, for ``mock-server`` only: the test key it prints is
    the one its users must export."""
    out, err = sys.stdout, sys.stderr
    sys.stdout = out._stream if isinstance(out, _ScrubbedStream) else out
    sys.stderr = err._stream if isinstance(err, _ScrubbedStream) else err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


_command: str | None = None


def set_command(name: str | None) -> None:
    """Name the sub-command being run (``batch``): every error and warning line names it from then on."""
    global _command
    _command = name


@contextlib.contextmanager
def command_named(name: str) -> Iterator[None]:
    """`set_command` for the time of one call (``holysheep batch`` run without the top-level parser)."""
    global _command
    before, _command = _command, name
    try:
        yield
    finally:
        _command = before


def prefix() -> str:
    """``holysheep batch`` while a sub-command runs, else ``holysheep`` (argparse's ``prog``)."""
    return f"holysheep {_command}" if _command else "holysheep"


def error(message: str, *, file: IO[str] | None = None, translate: bool = True) -> None:
    """Print ``holysheep <command>: error: <message>`` as one scrubbed line on stderr: the one format of
    every CLI error. The library's Python wording becomes the CLI's (`cli_words`); with ``translate`` False
    (a result line's own error, which speaks of the JSONL line, not of a flag) only its advice that has no
    one-to-one flag does (`cli_phrases`)."""
    _line("error", message, file, translate)


def warning(message: str, *, file: IO[str] | None = None) -> None:
    """Print ``holysheep <command>: warning: <message>`` as one scrubbed line on stderr."""
    _line("warning", message, file, True)


def _line(kind: str, message: str, file: IO[str] | None, translate: bool) -> None:
    from holysheep.cli._words import cli_phrases, cli_words

    text = cli_words(str(message)) if translate else cli_phrases(str(message))
    line = " ".join(scrub(text).split())
    print(f"{prefix()}: {kind}: {line}", file=file or sys.stderr, flush=True)


def exit_code_for(exc: BaseException) -> int:
    """2 for what the user must fix before any request (arguments, key format, files), else 1."""
    from holysheep._exceptions import InsecureTransportError, InvalidAPIKeyError, InvalidRequestError

    if isinstance(exc, (InvalidAPIKeyError, InvalidRequestError, InsecureTransportError, OSError)):
        return EXIT_USAGE
    return EXIT_API


def message_for(exc: BaseException) -> str:
    """The exception's message plus what to do about it on the command line."""
    from holysheep._exceptions import (
        APIConnectionError,
        AuthenticationError,
        InvalidRequestError,
        NotFoundError,
        PermissionDeniedError,
    )

    text = str(exc) or type(exc).__name__
    if isinstance(exc, InvalidRequestError):
        from holysheep.cli._words import field_words

        text = field_words(text, exc.field)
    if isinstance(exc, AuthenticationError | PermissionDeniedError):
        # a 401 already says to check HOLYSHEEP_API_KEY (or api_key=, which the CLI calls --api-key)
        return text if ENV_API_KEY in text else f"{text} Pass --api-key or set {ENV_API_KEY}."
    if isinstance(exc, NotFoundError):
        path = exc.request.url.path.rstrip("/") if exc.request is not None else ""
        if path.endswith(("/models", "/quota")) or "did you mean" in text.lower():
            return text  # `holysheep models` is what failed, or the message already says what to do
        return f"{text} Run 'holysheep models' to list the served models."
    if isinstance(exc, APIConnectionError):
        return f"{text} Pass --base-url or set HOLYSHEEP_BASE_URL."
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError):
        return f"{exc.strerror or text}: {exc.filename}" if exc.filename else text
    return text


def print_json(data: object, *, file: IO[str] | None = None) -> None:
    """Write ``data`` as JSON (one document) on stdout, scrubbed of the key."""
    out = file or sys.stdout
    out.write(scrub(json.dumps(data, indent=2, default=str)) + "\n")
    out.flush()


def use_rich(stream: IO[str]) -> bool:
    """True when rich is installed and ``stream`` is a terminal (pipes get plain text)."""
    if not stream.isatty() or os.environ.get("HOLYSHEEP_PLAIN"):
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), rule, *(fmt(r) for r in rows)])


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    right: Sequence[bool] | None = None,
    file: IO[str] | None = None,
) -> None:
    """Print a table: a rich table on a terminal with rich installed, aligned plain text otherwise."""
    out = file or sys.stdout
    align = list(right) if right is not None else [i > 0 for i in range(len(headers))]
    if use_rich(out):
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for h, r in zip(headers, align, strict=True):
            table.add_column(h, justify="right" if r else "left")
        for row in rows:
            table.add_row(*(scrub(str(c)) for c in row))
        Console(file=out).print(table)
        return
    if title:
        out.write(scrub(title) + "\n")
    out.write(scrub(_plain_table(headers, rows, align)) + "\n")
    out.flush()

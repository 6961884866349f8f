"""The output file of a JSONL run: its lock, what it already holds, and its final atomic compaction.

Each result line records `request_hash`, a hash of the input line it answers, so a resume against a
different input is refused. During a run, lines are appended (a re-run line follows the failure it
replaces); at the end the file is rewritten once, in input order, with only the last line of each
`custom_id`, through a temporary file and `os.replace`. A kill at any moment leaves either the old
or the new file, plus at most one torn last line, which the next `--resume` cuts off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from holysheep._exceptions import HolySheepError, InvalidRequestError
from holysheep.batch._output_files import (
    OutputLock,
    OutputLockedError,
    OutputPathError,
    create_new,
    open_regular,
    regular_opener,
)

__all__ = [
    "OutputLock",
    "OutputLockedError",
    "OutputMismatchError",
    "OutputPathError",
    "OutputNotResultsError",
    "PriorResult",
    "compact_output",
    "read_output",
    "request_hash",
]


class OutputMismatchError(InvalidRequestError):
    """`--resume` found results in the output file that belong to a different input file."""


class OutputNotResultsError(InvalidRequestError):
    """`--resume` was given an output that is not a results file of a holysheep run (or holds another
    ``output_format``'s lines): refused before anything is sent or written."""


class OutputWriteError(HolySheepError):
    """The output file could not be written (a full disk, a lost mount): the lines written before are intact,
    and ``--resume`` continues from them once the cause is fixed."""


def request_hash(raw: bytes, obj: object = None, parsed: bool = False) -> str:
    """A short hash (16 hex digits of SHA-256) of one input line: of its JSON value when it parses,
    so whitespace and key order do not matter, else of its bytes."""
    if parsed:
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    else:
        data = raw.strip()
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class PriorResult:
    """The last line an output file holds for one `custom_id`."""

    ok: bool
    request_hash: str | None


PIECE = 1 << 20
"""Output files are read in pieces of at most this many bytes (a line longer than this spans several)."""
MAX_PARSED_LINE = 64 << 20
"""A line not in the shape this module writes is parsed whole only up to this size; past it, it is no result line.
Lines this module wrote are read from their head, whatever their size: memory stays bounded by this."""


@dataclass(slots=True)
class _Line:
    offset: int
    length: int  # bytes, the newline included
    data: bytes  # the whole line, or (``whole`` False: longer than MAX_PARSED_LINE) its first piece
    whole: bool


def _open(path: Path, mode: str = "rb") -> IO[bytes]:
    """The output (or a file beside it) opened without following a link or blocking on a FIFO."""
    f: IO[bytes] = open(path, mode, opener=regular_opener())  # noqa: SIM115 - the caller closes it
    return f


def _lines(f: IO[bytes], check: Callable[[int, bytes, bool], None] | None = None) -> Iterator[_Line]:
    """Every newline-terminated line of ``f``, read in pieces (memory: at most ``MAX_PARSED_LINE`` + a piece,
    whatever the file holds); stops at a torn tail. ``check(offset, head, long)`` sees the first piece of each
    line (the torn tail's too) before the rest is read, and again (``long`` True) once the line is longer than
    ``MAX_PARSED_LINE``; it may raise: a file that is no results file is refused from its first bytes, not
    after reading a line of a gigabyte."""
    offset = 0
    while True:
        first = f.readline(PIECE)
        if not first:
            return
        if check is not None:
            check(offset, first, False)
        parts, length, piece, keep = [first], len(first), first, True
        while not piece.endswith(b"\n"):
            piece = f.readline(PIECE)
            if not piece:
                return  # a torn tail
            length += len(piece)
            if keep and length > MAX_PARSED_LINE:
                keep, parts = False, [first]
                if check is not None:
                    check(offset, first, True)
            elif keep:
                parts.append(piece)
        yield _Line(offset, length, parts[0] if len(parts) == 1 else b"".join(parts), keep)
        offset += length


def _complete_lines(path: Path) -> Iterator[_Line]:
    """The newline-terminated lines of ``path`` (see `_lines`)."""
    with _open(path) as f:
        yield from _lines(f)


_HEAD = b'{"custom_id":'
_OPENAI_HEAD = b'{"id":"batch_req_'
_DECODER = json.JSONDecoder()
_STATUS = re.compile(r',"response":\{"status_code":\s*(\d{3})\b')


def _fast_head(raw: bytes, whole: bool = True) -> tuple[str, str | None, bool, str] | None:
    """`(custom_id, request_hash, ok, output_format)` read from the head of a line this module's writer (or the
    OpenAI format's) wrote, without parsing the (possibly large) response; None for any other shape. Only the
    head of a line that is not ``whole`` is decoded."""
    if raw.startswith(_HEAD):
        kind, pos = "holysheep", len(_HEAD)
    elif raw.startswith(_OPENAI_HEAD) and not whole:  # (a whole OpenAI line is parsed: its "error" comes last)
        kind, pos = "openai", 6
    else:
        return None
    try:
        text = raw.decode() if whole else raw[:PIECE].decode("utf-8", "ignore")
        if kind == "openai":
            _, pos = _DECODER.raw_decode(text, pos)
            if not text.startswith(',"custom_id":', pos):
                return None
            pos += 13
        cid, end = _DECODER.raw_decode(text, pos)
        if not isinstance(cid, str) or not text.startswith(',"request_hash":', end):
            return None
        digest, end = _DECODER.raw_decode(text, end + 16)
        if kind == "openai":
            if text.startswith(',"response":null,"error":', end):
                return cid, digest if isinstance(digest, str) else None, False, kind
            status = _STATUS.match(text, end)
            if status is None:
                return None
            return cid, digest if isinstance(digest, str) else None, 200 <= int(status[1]) < 300, kind
    except ValueError:
        return None
    if text.startswith(',"response":', end):
        ok = True
    elif text.startswith(',"error":', end):
        ok = False
    else:
        return None
    return cid, digest if isinstance(digest, str) else None, ok, kind


def _head(raw: bytes, whole: bool = True) -> tuple[str, str | None, bool, str] | None:
    """`(custom_id, request_hash, ok, output_format)` of a result line; None when it is no result line of
    either format (a line that is not ``whole`` is judged by its head alone)."""
    fast = _fast_head(raw, whole)
    if fast is not None or not whole:
        return fast
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    cid = obj.get("custom_id") if isinstance(obj, dict) else None
    if not isinstance(cid, str):
        return None
    digest = obj.get("request_hash")
    digest = digest if isinstance(digest, str) else None
    response, error = obj.get("response"), obj.get("error")
    if isinstance(response, dict) and "status_code" in response and "body" in response:  # an OpenAI Batch line
        status = response["status_code"]
        return cid, digest, isinstance(status, int) and 200 <= status < 300 and error is None, "openai"
    if response is None and isinstance(error, dict) and "id" in obj:  # an OpenAI line with no HTTP reply
        return cid, digest, False, "openai"
    if isinstance(response, dict) or isinstance(error, dict):
        return cid, digest, response is not None and error is None, "holysheep"
    return None


_HEADS = (_HEAD, _OPENAI_HEAD)


def _not_results(path: Path, why: str) -> OutputNotResultsError:
    return OutputNotResultsError(
        f"{path} is not a results file of a holysheep run ({why}); --resume only continues a file written by "
        "`holysheep batch` / run_jsonl, and leaves any other file untouched. Name a new output file (-o), or "
        "check the path.", field="output_path")


def _shown(raw: bytes) -> str:
    return raw[:60].decode("utf-8", "replace").rstrip()


def read_output(path: Path, output_format: str | None = None) -> dict[str, PriorResult]:
    """The last result line per `custom_id` in an output file. A torn last line (a crash mid-write) is cut off
    the file first. Raises `OutputNotResultsError`, before changing anything, when the file holds a line
    that is no result line, or (``output_format`` given) lines of another output format. The file is read in
    pieces: one that does not start like a results file is refused from its first bytes."""
    prior: dict[str, PriorResult] = {}
    if not os.path.lexists(path):
        return prior

    def check(offset: int, head: bytes, long: bool) -> None:  # refuse a line as soon as it cannot be a result
        if long and _fast_head(head, whole=False) is None:
            raise _not_results(path, f"line {_line_number(path, offset)} is longer than {MAX_PARSED_LINE >> 20} MiB "
                                     f"and not a result line: {_shown(head)!r}")
        start = head.lstrip()
        if start and not start.startswith(b"{"):
            if len(head) < PIECE and not head.endswith(b"\n"):  # the file's last bytes, with no newline
                raise _not_results(path, "its last line is neither a result line nor the start of one")
            raise _not_results(path, f"line {_line_number(path, offset)} is not a result line: {_shown(head)!r}")

    good_end = 0
    formats: set[str] = set()
    with _open(path) as f:
        for line in _lines(f, check):
            good_end = line.offset + line.length
            raw = line.data
            if raw[:1].isspace() and not raw.strip():  # a blank line (checked without copying a long one)
                continue
            head = _head(raw, line.whole)
            if head is None:
                raise _not_results(path, f"line {_line_number(path, line.offset)} is not a result line: "
                                         f"{_shown(raw)!r}")
            cid, digest, ok, kind = head
            formats.add(kind)
            prior[cid] = PriorResult(ok=ok, request_hash=digest)
        size = os.fstat(f.fileno()).st_size
        if good_end != size:
            f.seek(good_end)
            tail = f.read(64)
            if not tail.startswith(_HEADS):
                raise _not_results(path, "its last line is neither a result line nor the start of one")
    if len(formats) > 1:
        raise OutputNotResultsError(
            f"{path} mixes result lines of both output formats (holysheep and openai); --resume would add to "
            "the mix. Start a new output file, or --overwrite to run every line again.", field="output_path")
    if output_format is not None and formats and output_format not in formats:
        held = formats.pop()
        raise OutputNotResultsError(
            f"{path} holds {held}-format results, and this run writes {output_format!r} lines "
            f"(--output-format {output_format}): one results file has one format. Resume it with "
            f"--output-format {held} (output_format={held!r}), or write the {output_format} format to a new "
            "output file.", field="output_path")
    if good_end != size:
        with _open(path, "r+b") as f:
            f.truncate(good_end)
    return prior


def _line_number(path: Path, offset: int) -> int:
    """The 1-based number of the line that starts at ``offset`` (only for an error message), counted in pieces."""
    count = 1
    with _open(path) as f:
        while offset > 0:
            piece = f.read(min(offset, PIECE))
            if not piece:
                break
            count += piece.count(b"\n")
            offset -= len(piece)
    return count


def _copy(src: IO[bytes], out: IO[bytes], offset: int, length: int) -> None:
    src.seek(offset)
    while length > 0:
        piece = src.read(min(length, PIECE))
        if not piece:
            raise OSError(f"the output file shrank while it was compacted (at byte {offset})")
        out.write(piece)
        length -= len(piece)


def _write_compacted(path: Path, tmp: Path, order: Iterable[str], last: dict[str, tuple[int, int]],
                     extra: list[tuple[int, int]]) -> int:
    written = 0
    with _open(path) as src:
        mode = stat.S_IMODE(os.fstat(src.fileno()).st_mode)
        with os.fdopen(create_new(tmp, 0o600), "wb") as out:
            os.fchmod(out.fileno(), mode)  # the results keep the output's permissions
            spans: list[tuple[int, int]] = []
            for cid in order:
                span = last.pop(cid, None)
                if span is not None:
                    spans.append(span)
            spans.extend(last.values())
            spans.extend(extra)
            for offset, length in spans:
                _copy(src, out, offset, length)
                written += 1
            out.flush()
            os.fsync(out.fileno())
    return written


def compact_output(path: Path, order: Iterable[str], drop: Iterable[str] = ()) -> int:
    """Rewrite `path` atomically with one line per `custom_id` (its last), in `order`; lines whose id
    is not in `order` follow at the end, but those of the ids in `drop`. Returns the number of lines written.
    The temporary copy (``OUTPUT.tmp``) is created new (``O_EXCL``, never through a link)."""
    if not os.path.lexists(path):
        return 0
    last: dict[str, tuple[int, int]] = {}
    extra: list[tuple[int, int]] = []
    for line in _complete_lines(path):
        head = _head(line.data, line.whole)
        if head is None:
            extra.append((line.offset, line.length))
        else:
            last[head[0]] = (line.offset, line.length)
    for cid in set(drop).difference(order):
        last.pop(cid, None)
    tmp = path.with_name(path.name + ".tmp")
    try:
        written = _write_compacted(path, tmp, order, last, extra)
    except OutputPathError:
        raise  # what is at OUTPUT.tmp is not ours: leave it
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()  # a failed copy (a full disk) leaves nothing behind; the output is untouched
        raise
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # make the rename durable where the platform allows it
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return written


def empty_output(path: Path) -> None:
    """Empty the output (``--overwrite``), without following a link or blocking on a FIFO."""
    os.close(open_regular(path, os.O_WRONLY | os.O_TRUNC))

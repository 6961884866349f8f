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
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from holysheep._exceptions import HolySheepError, InvalidRequestError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "OutputLock",
    "OutputLockedError",
    "OutputMismatchError",
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


class OutputLockedError(InvalidRequestError):
    """Another run (a live process) is writing the same output file."""


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


def _complete_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """`(offset, line)` for every newline-terminated line; stops at a torn tail."""
    offset = 0
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            yield offset, raw
            offset += len(raw)


_HEAD = b'{"custom_id":'
_DECODER = json.JSONDecoder()


def _fast_head(raw: bytes) -> tuple[str, str | None, bool, str] | None:
    """`(custom_id, request_hash, ok, "holysheep")` read from the head of a line this module's writer wrote,
    without parsing the (possibly large) response; None for any other shape."""
    if not raw.startswith(_HEAD):
        return None
    try:
        text = raw.decode()
        cid, end = _DECODER.raw_decode(text, len(_HEAD))
        if not isinstance(cid, str) or not text.startswith(',"request_hash":', end):
            return None
        digest, end = _DECODER.raw_decode(text, end + 16)
    except ValueError:
        return None
    if text.startswith(',"response":', end):
        ok = True
    elif text.startswith(',"error":', end):
        ok = False
    else:
        return None
    return cid, digest if isinstance(digest, str) else None, ok, "holysheep"


def _head(raw: bytes) -> tuple[str, str | None, bool, str] | None:
    """`(custom_id, request_hash, ok, output_format)` of a result line; None when it is no result line of
    either format."""
    fast = _fast_head(raw)
    if fast is not None:
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


_HEADS = (_HEAD, b'{"id":"batch_req_')


def _not_results(path: Path, why: str) -> OutputNotResultsError:
    return OutputNotResultsError(
        f"{path} is not a results file of a holysheep run ({why}); --resume only continues a file written by "
        "`holysheep batch` / run_jsonl, and leaves any other file untouched. Name a new output file (-o), or "
        "check the path.", field="output_path")


def read_output(path: Path, output_format: str | None = None) -> dict[str, PriorResult]:
    """The last result line per `custom_id` in an output file. A torn last line (a crash mid-write) is cut off
    the file first. Raises `OutputNotResultsError`, before changing anything, when the file holds a line
    that is no result line, or (``output_format`` given) lines of another output format."""
    prior: dict[str, PriorResult] = {}
    if not path.exists():
        return prior
    good_end = 0
    formats: set[str] = set()
    for offset, raw in _complete_lines(path):
        good_end = offset + len(raw)
        if raw[:1].isspace() and not raw.strip():  # a blank line (checked without copying a long one)
            continue
        head = _head(raw)
        if head is None:
            shown = raw[:60].decode("utf-8", "replace").rstrip()
            raise _not_results(path, f"line {_line_number(path, offset)} is not a result line: {shown!r}")
        cid, digest, ok, kind = head
        formats.add(kind)
        prior[cid] = PriorResult(ok=ok, request_hash=digest)
    size = path.stat().st_size
    if good_end != size:
        with path.open("rb") as f:
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
        with path.open("r+b") as f:
            f.truncate(good_end)
    return prior


def _line_number(path: Path, offset: int) -> int:
    """The 1-based number of the line that starts at ``offset`` (only for an error message)."""
    with path.open("rb") as f:
        return f.read(offset).count(b"\n") + 1


def _write_compacted(path: Path, tmp: Path, order: Iterable[str], last: dict[str, tuple[int, int]],
                     extra: list[tuple[int, int]]) -> int:
    written = 0
    with path.open("rb") as src, tmp.open("wb") as out:
        spans: list[tuple[int, int]] = []
        for cid in order:
            span = last.pop(cid, None)
            if span is not None:
                spans.append(span)
        spans.extend(last.values())
        spans.extend(extra)
        for offset, length in spans:
            src.seek(offset)
            out.write(src.read(length))
            written += 1
        out.flush()
        os.fsync(out.fileno())
    return written


def compact_output(path: Path, order: Iterable[str], drop: Iterable[str] = ()) -> int:
    """Rewrite `path` atomically with one line per `custom_id` (its last), in `order`; lines whose id
    is not in `order` follow at the end, but those of the ids in `drop`. Returns the number of lines written."""
    if not path.exists():
        return 0
    last: dict[str, tuple[int, int]] = {}
    extra: list[tuple[int, int]] = []
    for offset, raw in _complete_lines(path):
        head = _head(raw)
        if head is None:
            extra.append((offset, len(raw)))
        else:
            last[head[0]] = (offset, len(raw))
    for cid in set(drop).difference(order):
        last.pop(cid, None)
    tmp = path.with_name(path.name + ".tmp")
    try:
        written = _write_compacted(path, tmp, order, last, extra)
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


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


class OutputLock:
    """`OUTPUT.lock`: an OS lock (``fcntl.flock``) on the lock file, which dies with its process, so a lock
    left by a killed run never blocks the next one (whatever pid the file names) and two runs can never
    both hold it. The file's text (pid, host, start time) is only for the message a second run gets.
    Where ``fcntl`` is missing (Windows) the file is created with ``O_EXCL`` and holds the writer's pid;
    a lock whose process no longer exists is taken over."""

    def __init__(self, output: Path) -> None:
        self.path = output.with_name(output.name + ".lock")
        self._held = False
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            self._acquire_by_pid()
            return
        for _ in range(10):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise OutputLockedError(
                    f"another run ({self._describe_holder()}) is writing {self.path.name[:-5]}: wait for it to "
                    f"finish, or use a different output file.", field="output_path") from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:  # the holder released (and removed) it between our open and our lock: try again
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            os.write(fd, f"pid {os.getpid()} on host {socket.gethostname()}, started {started}\n".encode())
            self._fd = fd
            self._held = True
            return
        raise OutputLockedError(f"could not take the lock {self.path}; another run keeps taking it.",
                                field="output_path")

    def _describe_holder(self) -> str:
        try:
            text = self.path.read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text[:200] if text.startswith("pid ") else "pid ?"

    def _acquire_by_pid(self) -> None:  # pragma: no cover - Windows
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and (holder == 0 or _pid_alive(holder)):
                    raise OutputLockedError(
                        f"another run (pid {holder or '?'}) is writing {self.path.name[:-5]}: wait for it to finish, "
                        f"or use a different output file. If no such run exists, delete {self.path}.",
                        field="output_path") from None
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()  # stale: its process is gone
                continue
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            finally:
                os.close(fd)
            self._held = True
            return
        raise OutputLockedError(f"could not take the lock {self.path}; delete it if no run is using it.",
                                field="output_path")

    def _holder(self) -> int | None:  # pragma: no cover - Windows
        """The pid in the lock file; 0 when it cannot be read yet (a writer that just created it);
        None when the file is gone or holds no pid for a while (stale)."""
        try:
            text = self.path.read_text().strip()
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError:
            return 0
        if text.isdigit():
            return int(text)
        return 0 if age < 5.0 else None

    def release(self) -> None:
        if self._held:
            self._held = False
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # removed while still locked: a run that opened it sees a stale inode
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

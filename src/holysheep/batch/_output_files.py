"""The output file's place on disk: which paths ``-o`` may name, how the run opens them, and its lock.

The run appends to the output, then replaces it (``os.replace``) with a compacted copy. So ``-o`` must name a
regular file, or a path where none exists yet (`output_target`): a device (``/dev/null``), a FIFO, a socket or
a folder is refused before anything is sent, as is a link that leads to none of these, or a file with
several names (the replacement would break the other names). A link to a regular file is followed once, at
the start: the run then works on the file it leads to (lock, temporary file and replacement sit next to it),
so two names for one file share one lock. Every later open adds ``O_NOFOLLOW`` and ``O_NONBLOCK`` and
checks the descriptor (`open_regular`): a link, FIFO or device put in place during the run is refused, and
an ``open()`` never blocks on a FIFO nobody reads.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path

from holysheep._exceptions import InvalidRequestError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["OutputLock", "OutputLockedError", "OutputPathError", "check_beside", "create_new", "open_regular",
           "output_target", "regular_opener"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class OutputPathError(InvalidRequestError):
    """``-o`` (``output_path``), or a file the run keeps beside it (``OUTPUT.lock``, ``OUTPUT.tmp``), is not a
    regular file it may write: refused before anything is sent (CLI: exit 2)."""


class OutputLockedError(InvalidRequestError):
    """Another run (a live process) is writing the same output file."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(named: Path, what: str) -> OutputPathError:
    return OutputPathError(
        f"the output path {named} {what}. holysheep batch appends its results to a regular file and then replaces "
        "that file with a compacted copy, which would destroy what is there. Name a regular file or a new path "
        "(-o results.jsonl); to see the results on the terminal or throw them away, use -o - (stdout) and "
        "redirect it (-o - > /dev/null).", field="output_path")


def output_target(named: Path) -> Path:
    """The file a run on ``-o named`` works on: ``named`` itself, or the regular file a link leads to, with
    every folder on the way resolved. Raises `OutputPathError` for anything else (see the module)."""
    try:
        st = os.lstat(named)
    except FileNotFoundError:
        return Path(os.path.realpath(named.parent)) / named.name
    except OSError as exc:
        raise _refuse(named, f"cannot be examined ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(named))
        try:
            st = os.lstat(real)
        except OSError:
            raise _refuse(named, f"is a symbolic link to {os.readlink(named)}, which does not exist") from None
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(named, f"is a symbolic link to {real}, which is {_kind(st.st_mode)}")
    elif not stat.S_ISREG(st.st_mode):
        raise _refuse(named, f"is {_kind(st.st_mode)}")
    else:
        real = Path(os.path.realpath(named.parent)) / named.name
    if st.st_nlink > 1:
        raise _refuse(named, f"has {st.st_nlink} names (hard links): replacing it would cut it off from the "
                             "others. Copy it to a file of its own first")
    return real


def _checked(fd: int, path: Path, what: str) -> int:
    """``fd`` when it is a regular file with one name (blocking mode restored); else closed, and refused."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        problem = _kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else f"a file with {st.st_nlink} names"
        raise OutputPathError(f"{what} {path} is {problem}, not a file this run may write (something else put it "
                              "there). Remove it and run again.", field="output_path")
    if _NONBLOCK and fcntl is not None:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    return fd


def open_regular(path: Path, flags: int, what: str = "the output file", mode: int = 0o666) -> int:
    """``os.open(path, flags)`` without following a link at ``path`` and without blocking on a FIFO; the
    descriptor of a regular file with one name, or `OutputPathError`."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise OutputPathError(f"{what} {path} is a symbolic link (to {os.readlink(path)}): holysheep does not "
                                  "write through links it did not make. Remove it and run again.",
                                  field="output_path") from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{what} {path} is {_kind(st.st_mode)}, not a file: remove it and run again.",
                                  field="output_path") from None
        raise
    return _checked(fd, path, what)


def regular_opener(what: str = "the output file") -> Callable[[str, int], int]:
    """An ``opener=`` for ``open()`` that opens as `open_regular` does."""
    def opener(name: str, flags: int) -> int:
        return open_regular(Path(name), flags, what)
    return opener


def create_new(path: Path, mode: int = 0o666) -> int:
    """A new file at ``path`` (``O_EXCL``: never through a link); a regular file left there by a killed run is
    removed first, anything else refused."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        return os.open(path, flags, mode)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{path} is {_kind(st.st_mode)}; the run writes its temporary copy there and "
                                  "does not follow it. Remove it and run again.", field="output_path") from None
        os.unlink(path)
        return os.open(path, flags, mode)


def check_beside(path: Path) -> None:
    """Refuse (`OutputPathError`) before anything is sent when ``path`` (``OUTPUT.tmp``) holds what is not a
    regular file: a link there would receive the results."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{path} is {_kind(st.st_mode)}; the run writes its temporary copy of the output "
                                  "there and does not follow it. Remove it and run again.", field="output_path")


class OutputLock:
    """`OUTPUT.lock`: an OS lock (``fcntl.flock``) on the lock file, which dies with its process, so a lock
    left by a killed run never blocks the next one (whatever pid the file names) and two runs can never
    both hold it. ``output`` is the file the run works on (`output_target`: links resolved), so every name of
    one file leads to one lock. The lock file is opened without following a link and must be a regular
    file with one name. Its text (pid, host, start time) is only for the message a second run gets.
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
            fd = open_regular(self.path, os.O_CREAT | os.O_RDWR, "the lock file", 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise OutputLockedError(
                    f"another run ({self._describe_holder()}) is writing {self.path.name[:-5]}: wait for it to "
                    f"finish, or use a different output file.", field="output_path") from None
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(self.path))
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
            fd = open_regular(self.path, os.O_RDONLY, "the lock file")
        except (OSError, OutputPathError):
            return "pid ?"
        with os.fdopen(fd, "rb") as f:
            text = f.read(400).decode(errors="replace").strip()
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

"""State the SDK keeps between processes, kept private: a folder only this user can write, and files opened
without following links.

The default rate-limit folder has a predictable name in the shared temp directory, so another local user may
have made it first, or planted links in it. `private_folder` creates each missing level 0700 and refuses a
level that is a link, is not a folder, belongs to another user or has group/other write bits: it warns once
and hands out a fresh private folder (``mkdtemp``, 0700) for this process instead. `open_private_file` opens
with ``O_NOFOLLOW`` and refuses anything but a regular file of this user with one link.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

__all__ = ["file_problem", "folder_problem", "open_private_file", "private_folder", "warn_once"]

_lock = threading.Lock()
_warned: set[str] = set()
_fallback: Path | None = None


def warn_once(key: str, message: str) -> None:
    """One ``UserWarning`` per ``key`` and process."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, UserWarning, stacklevel=3)


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None  # Windows: no owners to compare


def _others_problem(st: os.stat_result) -> str | None:
    """Why what ``st`` describes can be changed by another user: owned by one, or group/other-writable."""
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return f"belongs to another user (uid {st.st_uid}; you are uid {uid})"
    if uid is not None and st.st_mode & 0o022:
        return f"can be written by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` is not private to this user (None: it is)."""
    try:
        st = os.lstat(folder)
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    return _others_problem(st)


def file_problem(path: Path) -> str | None:
    """Why the file at ``path`` (a link followed) could hold what another user put there: not a regular file,
    owned by another user, or writable by others. None when it is this user's alone, or does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    return _others_problem(st)


def _fallback_folder() -> Path:
    global _fallback
    with _lock:
        if _fallback is None or not _fallback.is_dir():
            _fallback = Path(tempfile.mkdtemp(prefix="holysheep-private-"))  # 0700, a name nobody can guess
            atexit.register(shutil.rmtree, _fallback, ignore_errors=True)  # this process's only: gone with it
        return _fallback


def private_folder(path: Path, *, top: Path | None = None, what: str = "state folder",
                   setting: str = "") -> Path | None:
    """``path``, created 0700 when missing and checked, with each level between ``top`` (exclusive, e.g. the
    temp directory) and it; a private fallback folder (with one warning) when a level is not private to this
    user; None when it cannot be created (a read-only place: the caller keeps its state in memory)."""
    levels = [path]
    if top is not None:
        levels += [p for p in path.parents if top in p.parents]
    for level in reversed(levels):
        try:
            level.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
        problem = folder_problem(level)
        if problem is not None:
            fallback = _fallback_folder()
            how = f" or set {setting} to a folder only you can write" if setting else ""
            warn_once(f"folder:{level}", (
                f"The {what} {level} {problem}: holysheep does not use it (another user could read or change "
                f"what is kept there) and uses the private folder {fallback} for this process instead. "
                f"Remove {level}{how}."))
            return fallback
    return path


def open_private_file(path: Path, what: str = "state file") -> int | None:
    """A read-write descriptor of ``path`` (created 0600), opened without following a link; None, with one
    warning, when it is a link or not a regular file of this user with one name (a planted file)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:  # a link (ELOOP), or unwritable: the caller keeps the state in memory
        if os.path.islink(path):
            warn_once(f"file:{path}", f"The {what} {path} is a symbolic link: holysheep does not follow it and "
                      f"keeps this state in memory. Remove {path}.")
        return None
    st = os.fstat(fd)
    uid = _uid()
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or (uid is not None and st.st_uid != uid):
        os.close(fd)
        warn_once(f"file:{path}", f"The {what} {path} is not a regular file of yours with one name (a link to "
                  f"another file?): holysheep does not use it and keeps this state in memory. Remove {path}.")
        return None
    return fd

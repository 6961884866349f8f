"""Open files for thousands in flight: each request in flight holds a socket, and the process may hold only
``RLIMIT_NOFILE`` of them. A batch raises the soft limit up to the hard one when it needs more, or refuses
before any request with an error that says how to fix it."""

from __future__ import annotations

from holysheep._exceptions import InvalidRequestError

__all__ = ["HEADROOM", "ensure_open_files"]

HEADROOM = 256
"""Files kept free beside the batch's sockets (the interpreter, logs, the JSONL files, DNS)."""


def ensure_open_files(concurrency: int) -> int | None:
    """Make sure this process may open ``concurrency + HEADROOM`` files; the soft limit now (None where the
    platform has no ``RLIMIT_NOFILE``). Raises ``InvalidRequestError`` when even the hard limit is too low."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    need = concurrency + HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return int(soft)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise InvalidRequestError(
            f"concurrency={concurrency} needs about {need:,} open files (one socket per request in flight), but "
            f"this process may open at most {hard:,} (the RLIMIT_NOFILE hard limit). Lower concurrency to "
            f"{max(1, hard - HEADROOM):,} or less, or raise the limit where the process starts: `ulimit -n {need}` "
            f"in the shell, `--ulimit nofile={need}:{need}` for docker, `LimitNOFILE={need}` for systemd.",
            field="concurrency")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    except (ValueError, OSError) as exc:
        raise InvalidRequestError(
            f"concurrency={concurrency} needs about {need:,} open files, but the soft limit is {soft:,} and raising "
            f"it failed ({exc}). Raise it before starting Python (`ulimit -n {need}`) or lower concurrency.",
            field="concurrency") from None
    return need

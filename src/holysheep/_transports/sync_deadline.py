"""The per-attempt deadline on the sync httpx transport, response headers included.

httpx applies its read timeout to each socket read, so a server that trickles its status line and
headers one byte at a time never times out. The SDK's own sync pool therefore reads through
``DeadlineNetworkBackend``: every read waits at most until the deadline of the attempt running on
this thread (set with ``attempt_deadline``), and a read past it raises ``httpcore.ReadTimeout``,
which httpx maps to ``httpx.ReadTimeout`` (a retryable ``APITimeoutError``). A caller's own
``http_client`` keeps its own transport and only gets the body deadline.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

__all__ = ["attempt_deadline", "bounded_read_timeout"]

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("holysheep_attempt_deadline", default=None)


@contextlib.contextmanager
def attempt_deadline(seconds: float | None) -> Iterator[None]:
    """Bound every socket read of the SDK's sync pool on this thread by ``seconds`` from now."""
    if seconds is None:
        yield
        return
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def bounded_read_timeout(timeout: float | None) -> float | None:
    """The read timeout for one socket read on this thread: at most what is left of the attempt's deadline.
    Raises ``httpcore.ReadTimeout`` once the deadline has passed."""
    current = _deadline.get()
    if current is None:
        return timeout
    at, seconds = current
    left = at - time.monotonic()
    if left <= 0:
        import httpcore

        raise httpcore.ReadTimeout(f"the attempt took longer than its {seconds:g} s deadline (timeout=)")
    return left if timeout is None else min(timeout, left)

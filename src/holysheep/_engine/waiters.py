"""The one "wake the first waiter that is not done" step, shared by the engine's queues and limiter."""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["wake_first"]


def wake_first(waiters: deque[asyncio.Future[None]]) -> bool:
    """Pop waiters until one is still pending and wake it; False when none was (cancelled ones are skipped)."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False

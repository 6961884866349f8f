"""`wake_first`: the one wake step of ResultChannel, WorkQueue and AIMDLimiter."""

from __future__ import annotations

import asyncio
from collections import deque

from holysheep._engine.waiters import wake_first


async def test_wakes_the_first_pending_waiter_and_skips_cancelled_ones() -> None:
    loop = asyncio.get_running_loop()
    cancelled, first, second = loop.create_future(), loop.create_future(), loop.create_future()
    cancelled.cancel()
    waiters: deque[asyncio.Future[None]] = deque([cancelled, first, second])
    assert wake_first(waiters) is True
    assert first.done() and not second.done()
    assert list(waiters) == [second]
    assert wake_first(waiters) is True and second.done()
    assert wake_first(waiters) is False and not waiters


async def test_a_queue_of_only_done_waiters_wakes_nobody() -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    done.set_result(None)
    waiters: deque[asyncio.Future[None]] = deque([done])
    assert wake_first(waiters) is False
    assert not waiters

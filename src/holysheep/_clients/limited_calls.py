"""The shells of a call under the client's limits (its ``max_cost_usd``, its key's known rate limits): they only
wait and send; `holysheep._engine.client_limits.ClientLimits` decides.

A client with no cap whose key has no known limit never comes here (``BaseClient._guard`` is one set lookup, and
none at all before anything loaded the rate-limit module); its replies are only looked at for the headers that
announce a limit (``BaseClient._heard``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from holysheep._core.call import Call, Outcome
    from holysheep._core.call_plan import CallPlan
    from holysheep._engine.client_limits import ClientLimits

__all__ = ["run_limited", "run_limited_async"]


def _set(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def run_limited(plan: CallPlan, limits: ClientLimits, attempt: Callable[[Call], Outcome]) -> object:
    """Drive ``plan`` (sync): reserve its worst case (waiting while requests in flight hold the room), take from
    the key's buckets before each attempt (sleeping ``limits.sleep``), feed them each reply's headers, settle."""
    ticket = limits.ticket(plan.call.spec)  # SpendCapError / InvalidRequestError here: nothing was sent
    woken = threading.Event()
    while not limits.reserve(ticket, woken.set):
        woken.wait()
        woken.clear()
    try:
        while True:
            while (wait := limits.delay(ticket)) > 0:
                limits.sleep(wait)
            outcome = attempt(plan.call)
            call = plan.call
            limits.heard(ticket, call.response_headers, call.status_code)
            delay = plan.after(outcome)
            if delay is None:
                break
            time.sleep(delay)
        result = plan.result()
    except BaseException as exc:
        limits.end(ticket, None, exc)
        raise
    limits.end(ticket, result, None)
    return result


async def run_limited_async(plan: CallPlan, limits: ClientLimits, attempt: Callable[[Call], Awaitable[Outcome]],
                            sleep: Callable[[float], Awaitable[None]]) -> object:
    """`run_limited` for the async client: waits are awaited (``limits.asleep`` for the buckets, ``sleep`` for
    retries), and a wait for room in the budget is woken from any thread."""
    ticket = limits.ticket(plan.call.spec)
    loop = asyncio.get_running_loop()
    while True:
        woken: asyncio.Future[None] = loop.create_future()

        def wake(fut: asyncio.Future[None] = woken) -> None:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
                loop.call_soon_threadsafe(_set, fut)

        if limits.reserve(ticket, wake):
            break
        await woken
    try:
        while True:
            while (wait := limits.delay(ticket)) > 0:
                await limits.asleep(wait)
            outcome = await attempt(plan.call)
            call = plan.call
            limits.heard(ticket, call.response_headers, call.status_code)
            delay = plan.after(outcome)
            if delay is None:
                break
            await sleep(delay)
        result = plan.result()
    except BaseException as exc:
        limits.end(ticket, None, exc)
        raise
    limits.end(ticket, result, None)
    return result

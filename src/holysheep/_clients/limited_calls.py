"""The shells of a call under the client's limits (its ``max_cost_usd``, its key's known rate limits): they only
wait and send; `holysheep._engine.client_limits.ClientLimits` decides.

A client with no cap whose key has no known limit never comes here (``BaseClient._guard`` is one set lookup, and
none at all before anything loaded the rate-limit module); its replies are only looked at for the headers that
announce a limit (``BaseClient._heard``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from holysheep._core.call import Call, Outcome
    from holysheep._core.call_plan import CallPlan
    from holysheep._core.config import ClientConfig
    from holysheep._engine.client_budget import ClientBudget
    from holysheep._engine.client_limits import ClientLimits, LimitClocks
    from holysheep._engine.key_limits import Sleep

__all__ = ["DISCOVERY_REPLIES", "ClientLimitsMixin", "run_limited", "run_limited_async"]


class _SharesLimits(Protocol):
    """A client as another one hands it its limits (`BaseClient._share_limits`)."""

    _budget: ClientBudget | None
    _prices: Mapping[str, object] | None
    _limit_clocks: LimitClocks
    _limits: ClientLimits | None


_KEY_LIMITS = "holysheep._engine.key_limits"
"""The module of the key's shared rate-limit buckets: until something loads it, no key has a known limit."""
_ANNOUNCED = ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens")
"""Headers by which a reply announces its key's limits (`client_limits.ANNOUNCED`)."""
DISCOVERY_REPLIES = 8
"""Replies a client with no known limit looks at for announced limits (error replies are always looked at)."""


class ClientLimitsMixin:
    """What `BaseClient` knows of its limits: the budget (``max_cost_usd``), the key whose shared buckets apply, and
    the test seam for their clock."""

    _config: ClientConfig

    def _init_limits(self, max_cost_usd: float | None, prices: Mapping[str, object] | None) -> None:
        """Check ``max_cost_usd`` and ``prices`` (before any I/O) and start with no limits object."""
        self._budget: ClientBudget | None = None
        if max_cost_usd is not None or prices is not None:
            from holysheep._engine.client_budget import ClientBudget, check_prices

            check_prices(prices)
            self._budget = None if max_cost_usd is None else ClientBudget(max_cost_usd, prices)
        self._prices: Mapping[str, object] | None = prices
        self._limits: ClientLimits | None = None  # made on first need (a cap, or a limit the key announced)
        self._limit_clocks: LimitClocks = {}
        self._unheard = DISCOVERY_REPLIES

    @functools.cached_property
    def _limits_key(self) -> str:
        """The base URL and a digest of the key (`senders.limits_key`): whose shared buckets apply."""
        from holysheep._clients.senders import config_limits_key

        return config_limits_key(self._config)

    @property
    def max_cost_usd(self) -> float | None:
        """The client-wide spend cap (``max_cost_usd=``), or None."""
        return None if self._budget is None else self._budget.max_cost_usd

    @property
    def spent_usd(self) -> float | None:
        """What this client's requests (its copies', its batches' and its ``as_openai()``'s too) cost so far under
        its ``max_cost_usd``; None without a cap."""
        return None if self._budget is None else self._budget.spent_usd

    def _guard(self) -> ClientLimits | None:
        """The client's limits when a request must ask them (a cap, or a limit its key is known to have), else
        None: a set lookup, and none at all before anything loaded the rate-limit module."""
        limits = self._limits
        if limits is None:
            if self._budget is None:
                module = sys.modules.get(_KEY_LIMITS)
                if module is None or not module.KEY_LIMITS.known(self._limits_key):
                    return None
            limits = self._make_limits()
        return limits if limits.active() else None

    def _make_limits(self) -> ClientLimits:
        from holysheep._engine.client_limits import ClientLimits

        limits = self._limits = ClientLimits(self._limits_key, self._budget, **self._limit_clocks)
        return limits

    def _heard(self, call: Call) -> None:
        """A reply outside the limits' path (no cap, no known limit): when its headers announce the key's limits,
        they are learned, and the next request takes from the shared bucket. Only the client's first
        ``DISCOVERY_REPLIES`` replies and any error reply are looked at: a server that announces its limits does
        so on every reply, and one that did not on the first ones costs nothing more (a header lookup on an httpx
        reply is a few microseconds, beside a JSON request the sync path keeps as cheap as openai's)."""
        if self._unheard:
            self._unheard -= 1
        elif (call.status_code or 200) < 400:
            return
        headers = call.response_headers
        if headers is not None and (_ANNOUNCED[0] in headers or _ANNOUNCED[1] in headers):
            (self._limits or self._make_limits()).learn(headers, call.spec.model)

    def _share_limits(self, other: _SharesLimits) -> None:
        """``other`` (a copy, or a batch's clone) spends from this client's budget and waits on its clocks."""
        other._budget, other._prices, other._limit_clocks = self._budget, self._prices, self._limit_clocks
        other._limits = None

    def _use_limits_clock(self, clock: Callable[[], float], sleep: Callable[[float], None],
                          asleep: Sleep | None = None) -> None:
        """Test seam (private): the clock buckets made by this client run on, and how its calls wait for them
        (``sleep`` for the sync client, ``asleep`` for the async one). Copies keep them."""
        clocks: LimitClocks = {"clock": clock, "sleep": sleep}
        if asleep is not None:
            clocks["asleep"] = asleep
        self._limit_clocks = clocks
        self._limits = None


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

"""What every request a client sends on its own shares (sans-I/O): its spend cap and its key's rate limits.

The shells (``Client._execute``, ``AsyncClient._execute``, and so ``as_openai()``'s requests, which run through
``_execute_raw``) only move bytes and wait; every decision is here::

    ticket = limits.ticket(plan.call.spec)        # the worst case reserved (or SpendCapError), before any I/O
    while not limits.reserve(ticket, wake): wait for wake
    for each attempt:
        while (delay := limits.delay(ticket)) > 0: sleep(delay)     # the key's shared buckets
        send; limits.heard(ticket, call)                             # the reply's x-ratelimit-* feed the buckets
    limits.end(ticket, result, error)             # settle with the usage, refund an error status

The rate limits are the batch engine's: `KEY_LIMITS` holds one bucket per (base URL, key[, model]) and limit,
made by whichever of a batch or a client first heard the server announce it (``x-ratelimit-limit-requests`` /
``-tokens``), shared by every batch and client of the process (and, through a file, of the machine). A client
with no cap whose key has no known limit never gets here: its shells ask `KeyLimits.known`, one set lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from typing_extensions import TypedDict

from holysheep._core.request import RequestSpec
from holysheep._core.stream_state import StreamState
from holysheep._core.wire import WireFormat, wire_of
from holysheep._core.wire.base import TokenUsage
from holysheep._engine.client_budget import ClientBudget
from holysheep._engine.key_limits import KEY_LIMITS, KeyLimits, SharedBucket, Sleep
from holysheep._engine.requests import estimate_tokens
from holysheep._engine.server_limits import LEARNED_BURST_S, LEARNED_SHARE, LIMITS_MEMORY, limits_scope, read_limits
from holysheep._exceptions import APIError, APIStatusError

__all__ = ["ANNOUNCED", "ClientLimits", "LimitClocks", "Ticket", "announces_limits"]

ANNOUNCED = ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens")
"""The headers by which a reply announces the key's limits (what a client with no known limit looks for)."""


class LimitClocks(TypedDict, total=False):
    """What `ClientLimits` runs on instead of the defaults (the test seam ``BaseClient._use_limits_clock``)."""

    clock: Callable[[], float]
    sleep: Callable[[float], None]
    asleep: Sleep


def announces_limits(headers: Mapping[str, str] | None) -> bool:
    """True when a reply's headers announce a rate limit (the one check a client with no known limit makes)."""
    return headers is not None and (ANNOUNCED[0] in headers or ANNOUNCED[1] in headers)


class Ticket:
    """One call's share of the client's limits: its reservation, its token charge and the buckets it takes from."""

    __slots__ = ("amount", "charge", "model", "reserved", "spec", "wire")

    def __init__(self, spec: RequestSpec, wire: WireFormat, amount: float) -> None:
        self.spec, self.wire, self.amount = spec, wire, amount
        model = spec.body.get("model") if spec.body else None
        self.model = model if isinstance(model, str) else None
        self.reserved = False
        self.charge = -1  # tokens taken from the token bucket (-1: not yet)


class ClientLimits:
    """A client's spend cap (``budget``, None without one) and its view of the key's shared rate limits.

    ``clock`` (monotonic seconds) and ``sleep``/``asleep`` are what buckets made here run on and what the shells
    wait with: tests pass fake ones (``BaseClient._use_limits_clock``)."""

    def __init__(self, key: str, budget: ClientBudget | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 asleep: Sleep | None = None, key_limits: KeyLimits = KEY_LIMITS) -> None:
        import asyncio

        self.key = key
        self.budget = budget
        self.clock, self.sleep = clock, sleep
        self.asleep: Sleep = asleep or asyncio.sleep
        self._key_limits = key_limits

    def active(self) -> bool:
        """True when a request must ask: a cap is set, or the key has a known limit."""
        return self.budget is not None or self._key_limits.known(self.key)

    # ------------------------------------------------------------------ before the first attempt
    def ticket(self, spec: RequestSpec) -> Ticket:
        """The call's ticket: its worst-case cost from its final body (an unpriced model under a cap is an
        `InvalidRequestError`, before any I/O). Requests without a body (GET) and bodies without a model cost
        nothing."""
        wire = wire_of(spec)
        amount = 0.0
        body = spec.body
        if self.budget is not None and body and isinstance(body.get("model"), str):
            amount = self.budget.worst_case(body, wire)
        return Ticket(spec, wire, amount)

    def reserve(self, ticket: Ticket, wake: Callable[[], None]) -> bool:
        """Reserve the ticket's worst case (`ClientBudget.reserve`): False while requests in flight hold the room
        (``wake`` is called when one ends); `SpendCapError` when it never fits."""
        budget = self.budget
        if budget is None or not ticket.amount or ticket.reserved:
            return True
        if budget.reserve(ticket.amount, wake):
            ticket.reserved = True
            return True
        return False

    # ------------------------------------------------------------------ before each attempt
    def _buckets(self, model: str | None) -> tuple[SharedBucket | None, SharedBucket | None]:
        """The key's request and token buckets for ``model`` (a batch's with that model, else the key's)."""
        found = self._key_limits.peek
        scope = limits_scope(self.key, model)
        requests = found(scope, "requests") or (found(self.key, "requests") if scope != self.key else None)
        tokens = found(scope, "tokens") or (found(self.key, "tokens") if scope != self.key else None)
        return requests, tokens

    def delay(self, ticket: Ticket) -> float:
        """Take this attempt's request (and, once per call, its tokens) from the key's buckets: 0.0 when taken, else
        the seconds to wait before asking again (nothing is taken then)."""
        requests, tokens = self._buckets(ticket.model)
        charge = 0
        if tokens is not None and ticket.charge < 0:
            charge = estimate_tokens(ticket.spec.body or {}, ticket.wire) if ticket.spec.body else 0
            if charge and not tokens.take_now(charge):
                return max(tokens.delay_for(charge), 1e-3)
        if requests is not None and not requests.take_now(1):
            if tokens is not None and charge:
                tokens.adjust(charge)
            return max(requests.delay_for(1), 1e-3)
        if ticket.charge < 0:
            ticket.charge = charge
        return 0.0

    # ------------------------------------------------------------------ after each attempt
    def heard(self, ticket: Ticket | None, headers: Mapping[str, str] | None, status: int | None) -> None:
        """A reply's ``x-ratelimit-*`` headers feed the key's buckets as a batch's replies do (made at the announced
        rate, capped at what remains); a 429 lowers their rate."""
        model = ticket.model if ticket is not None else None
        if headers is not None and announces_limits(headers):
            self.learn(headers, model)
        if status == 429:
            for bucket in self._buckets(model):
                if bucket is not None:
                    bucket.on_rate_limited()

    def learn(self, headers: Mapping[str, str], model: str | None) -> None:
        """Follow the limits a reply announces (`Admission._learned_bucket`'s rule: ``LEARNED_SHARE`` of the
        limit, a burst of ``LEARNED_BURST_S``, started at and capped by what remains)."""
        limits = read_limits(headers)
        if limits is None:
            return
        scope = limits_scope(self.key, model)
        LIMITS_MEMORY.remember(scope, limits)  # a batch started later applies them at once
        for kind, limit, remaining, window in (
                ("requests", limits.limit_requests, limits.remaining_requests, limits.requests_window_s()),
                ("tokens", limits.limit_tokens, limits.remaining_tokens, limits.tokens_window_s())):
            if not limit:
                continue
            rate = limit / (window or 60.0) * LEARNED_SHARE
            bucket = self._key_limits.bucket(scope, kind, rate, LEARNED_BURST_S, clock=self.clock,
                                             sleep=self.asleep, level=remaining)
            if remaining is not None:
                bucket.cap(remaining)

    # ------------------------------------------------------------------ at the end
    def end(self, ticket: Ticket, result: object, error: BaseException | None) -> None:
        """The call returned: settle its reservation with the reply's usage, refund it on an error status (nothing
        was billed); correct the token charge. A stream settles when it ends (however it ends: read to its end,
        closed early or cut off) with the usage it carried (``stream_options={"include_usage": True}``), or its
        whole reservation when none came. A body handed over unread (``with_streaming_response``, an
        ``as_openai()`` stream) counts its whole reservation now."""
        state = getattr(result, "_state", None) if error is None and ticket.spec.stream else None
        if isinstance(state, StreamState):
            if state.ended_at is None:
                state.on_end = lambda usage: self._close(ticket, result, None, self._stream_usage(ticket, usage))
                return
            self._close(ticket, result, None, self._stream_usage(ticket, state.usage))
            return
        self._close(ticket, result, error, None if error is not None else _usage(ticket, result))

    @staticmethod
    def _stream_usage(ticket: Ticket, usage: object) -> TokenUsage | None:
        try:
            return None if usage is None else ticket.wire.usage_block(usage)
        except Exception:  # a usage the format cannot read: the reservation counts
            return None

    def _close(self, ticket: Ticket, result: object, error: BaseException | None, usage: TokenUsage | None) -> None:
        if ticket.charge > 0:
            _, tokens = self._buckets(ticket.model)
            if tokens is not None:
                if error is not None:
                    tokens.adjust(ticket.charge)
                elif usage is not None and usage.input + usage.output > 0:
                    tokens.adjust(ticket.charge - (usage.input + usage.output))
            ticket.charge = 0
        budget = self.budget
        if budget is None or not ticket.reserved:
            return
        ticket.reserved = False
        if error is not None:
            if isinstance(error, APIStatusError) or not isinstance(error, APIError):  # refused, or never sent
                budget.refund(ticket.amount)
            else:  # a timeout, a cut connection or an unreadable reply may have been billed: the reservation counts
                budget.settle(ticket.amount, None)
            return
        cost = None
        if usage is not None and min(usage.input, usage.output) >= 0:
            model = ticket.model or ticket.wire.model_of(result)
            cost = budget.cost(model, usage.input, usage.output, usage.cached)
        budget.settle(ticket.amount, cost)


def _usage(ticket: Ticket, result: object) -> TokenUsage | None:
    """The reply's usage (`TokenUsage`), or None: a stream, a body handed over unread, or a reply without one."""
    spec, wire = ticket.spec, ticket.wire
    if spec.stream or spec.raw == "stream":
        return None
    if spec.raw:  # with_raw_response / as_openai(): the body was read, parse it as the format does
        content = getattr(result, "content", None)
        if not isinstance(content, bytes):
            return None
        try:
            result = wire.parse(content)
        except Exception:  # a body the format cannot read: the reservation counts
            return None
    try:
        return wire.usage(result)
    except Exception:
        return None

"""The client-wide spend cap (``Client(max_cost_usd=..., prices=...)``), sans-I/O and thread-safe.

One `ClientBudget` belongs to a client and is shared by its ``with_options`` copies, its ``as_openai()`` client
and its batches. It is the batch's `SpendCap` (the same worst case from a request's final body, the same
settling with the reply's usage, the same overage rule) behind a lock, so that threads of a sync ``Client`` and
tasks of an ``AsyncClient`` reserve from one budget:

- ``reserve`` before a request is sent: the worst case fits (True), or requests in flight hold the room it needs
  (False: the shell waits until one of them ends, then asks again), or it can never fit (`SpendCapError`, before
  any I/O). An unpriced model is an `InvalidRequestError` naming ``prices=``.
- ``settle`` with the reply's cost (the reported cost counts when it is more than the reservation), ``refund`` on
  an error status (nothing was billed).
- ``hold`` for a batch run on the client: the batch gets what the client has left (or its own ``max_cost_usd``
  when that is less) as its cap, held as one reservation while it runs, and ``end_hold`` counts what it spent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from holysheep._core.wire import WireFormat
from holysheep._engine.spend import Pricer, SpendCap, check_max_cost
from holysheep._exceptions import InvalidRequestError, SpendCapError

__all__ = ["BatchHold", "ClientBudget", "check_prices"]


def check_prices(prices: Mapping[str, object] | None) -> None:
    """``prices=`` of a client: None, or what a batch's ``prices=`` takes (every entry checked, a mapping only)."""
    if prices is not None:
        Pricer(prices)


@dataclass
class BatchHold:
    """What a batch on a capped client may spend (``usd``, its cap) and at which prices; ``ended`` once counted."""

    usd: float
    prices: Mapping[str, object]
    ended: bool = False


class ClientBudget:
    """The spend cap every request of one client shares (see the module's docstring)."""

    def __init__(self, max_cost_usd: object, prices: Mapping[str, object] | None = None) -> None:
        limit = check_max_cost(max_cost_usd)
        if limit is None:
            raise InvalidRequestError("max_cost_usd must be a positive number of USD.", field="max_cost_usd")
        self.prices: Mapping[str, object] = dict(prices or {})
        self._cap = SpendCap(limit, Pricer(self.prices))
        self._lock = threading.Lock()
        self._wake: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ figures
    @property
    def max_cost_usd(self) -> float:
        """The cap, in USD."""
        return self._cap.limit_usd

    @property
    def spent_usd(self) -> float:
        """What settled requests (and ended batches) cost."""
        return self._cap.spent_usd

    @property
    def reserved_usd(self) -> float:
        """What requests in flight (and running batches) hold."""
        return self._cap.reserved_usd

    @property
    def remaining_usd(self) -> float:
        """What is neither spent nor held: the most a new request may cost now."""
        with self._lock:
            cap = self._cap
            return max(0.0, cap.limit_usd - cap.spent_usd - cap.reserved_usd * cap.overage)

    # ------------------------------------------------------------------ one request
    def worst_case(self, body: Mapping[str, object], wire: WireFormat) -> float:
        """The most the request can cost (`SpendCap.worst_case`); an unpriced model is an `InvalidRequestError`."""
        need = self._cap.worst_case(body, wire)
        if need is None:
            model = str(body.get("model") or "")
            raise InvalidRequestError(
                f"no price for model {model!r}, and the client's max_cost_usd needs one to hold the cap: pass "
                f"prices={{{model!r}: (input_per_m, output_per_m)}} (USD per million tokens) to the client. "
                "Nothing was sent.", field="prices", reason="no price")
        return need

    def reserve(self, need: float, wake: Callable[[], None]) -> bool:
        """Reserve ``need`` USD: True when reserved; False when requests in flight hold the room it needs (``wake``
        is called once one of them ends: ask again then). `SpendCapError` when it cannot fit even with nothing in
        flight."""
        with self._lock:
            cap = self._cap
            if cap.try_reserve(need):
                return True
            if cap.in_flight:
                self._wake.append(wake)
                return False
            spent, limit = cap.spent_usd, cap.limit_usd
        raise SpendCapError(
            f"max_cost_usd=${limit:.6f} reached: ${spent:.6f} spent, and this request may cost up to ${need:.6f}. "
            "Nothing was sent (raise the client's max_cost_usd, or lower the request's output limit).",
            spent_usd=spent, reserved_usd=0.0, max_cost_usd=limit, worst_case_usd=need)

    def settle(self, amount: float, cost: float | None) -> None:
        """A reply came: its reported cost counts (also when it is more than the reservation: later reservations
        are scaled by that overage), or the whole reservation when the cost is unknown (`SpendCap.settle`)."""
        with self._lock:
            self._cap.settle(amount, cost)
            wake = self._woken()
        for call in wake:
            call()

    def refund(self, amount: float) -> None:
        """The request was not billed (an error status, or it was never sent): its reservation goes back."""
        with self._lock:
            self._cap.refund(amount)
            wake = self._woken()
        for call in wake:
            call()

    def _woken(self) -> list[Callable[[], None]]:
        wake, self._wake = self._wake, []
        return wake

    def cost(self, model: str, prompt: int, completion: int, cached: int = 0) -> float | None:
        """USD for one reply's usage at the client's prices (None: the model has no price)."""
        return self._cap.pricer.cost(model, prompt, completion, cached)

    # ------------------------------------------------------------------ a batch on the client
    def hold(self, batch_cap: float | None, batch_prices: Mapping[str, object] | None) -> BatchHold:
        """A batch starts: it may spend what the client has left, or ``batch_cap`` when that is less; that much is
        held for it until `end_hold`. Its prices are the client's, with the batch's own on top."""
        with self._lock:
            cap = self._cap
            left = max(0.0, cap.limit_usd - cap.spent_usd - cap.reserved_usd * cap.overage) / cap.overage
            usd = left if batch_cap is None else min(batch_cap, left)
            cap.reserved_usd += usd
            cap.in_flight += 1
        return BatchHold(usd, {**self.prices, **(batch_prices or {})})

    def end_hold(self, hold: BatchHold, spent_usd: float) -> None:
        """The batch ended having spent ``spent_usd``: that counts, the rest of its hold goes back (once)."""
        if hold.ended:
            return
        hold.ended = True
        self.settle(hold.usd, spent_usd)

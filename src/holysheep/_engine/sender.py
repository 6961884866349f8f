"""``Sender``: all the batch engine needs from a client, as a protocol (the clients implement it).

The engine sits below the clients: it drives each item's ``CallPlan`` (so it can pace retries and pause
the whole batch), while every decision inside a plan is the client's own sans-I/O code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from holysheep._core.call import Call, Outcome
from holysheep._core.call_plan import CallPlan
from holysheep._core.wire import CHAT, WireFormat

__all__ = ["Sender"]


class Sender(Protocol):
    """The interface the batch engine needs from a client."""

    def plan(self, params: Mapping[str, object], *, idempotency_key: str | None = None,
             wire: WireFormat = CHAT) -> CallPlan:
        """A plan for one request with ``create()`` parameters in ``wire``'s format (raises on invalid ones). The
        engine passes ``wire`` only for an item of another format than chat completions and embeddings."""
        ...

    async def attempt(self, call: Call) -> Outcome:
        """Send one attempt of ``call``; the call's decision on it."""
        ...

    @property
    def limits_key(self) -> str | None:
        """Names the server and key whose rate limits a batch may remember (None: do not remember)."""
        ...

    async def quota(self) -> Any:
        """The account's quota (``client.quota.retrieve()``)."""
        ...

    async def aclose(self) -> None:
        """Release what the sender owns."""
        ...

"""The clients' implementations of the batch engine's ``Sender`` protocol: call plans and single attempts.

The batch drives each item's ``CallPlan`` itself (so it can pace retries and pause the whole batch),
but every decision (retry or not, delay, hook, headers, fallback) is the client's own code.
``AsyncSender`` wraps an ``AsyncClient``; ``ThreadSender`` runs a sync ``Client``'s attempts in a
thread pool (used when that client has its own ``http_client`` or fallbacks, so they are honoured).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from holysheep._core.call import Call, Outcome
from holysheep._core.call_plan import CallPlan
from holysheep._core.hooks import HookSet
from holysheep._core.wire import CHAT, WireFormat

if TYPE_CHECKING:
    from holysheep._core.config import ClientConfig
    from holysheep._core.request import RequestSpec
    from holysheep._engine.client_budget import ClientBudget

__all__ = ["AsyncSender", "ThreadSender", "chat_plan", "config_limits_key", "limits_key"]


class PlanningClient(Protocol):
    """What a sender needs of any client (the clients import this module, never the reverse)."""

    @property
    def config(self) -> ClientConfig: ...

    def plan(self, spec: RequestSpec, *, idempotency_key: str | None = None) -> CallPlan: ...

    @property
    def quota(self) -> Any: ...


class AsyncAttemptingClient(PlanningClient, Protocol):
    """An ``AsyncClient``, as its sender sees it."""

    async def _attempt(self, call: Call) -> Outcome: ...

    def reserve_connections(self, n: int) -> None: ...

    async def aclose(self) -> None: ...


class SyncAttemptingClient(PlanningClient, Protocol):
    """A sync ``Client``, as its sender sees it."""

    def _attempt(self, call: Call) -> Outcome: ...


def limits_key(client: PlanningClient) -> str:
    """The base URL and a one-way digest of the key: which server's rate limits, for which account."""
    return config_limits_key(client.config)


def config_limits_key(config: ClientConfig) -> str:
    """`limits_key` of a client with ``config``."""
    key = config.api_key.reveal() or ""
    return f"{config.base_url}#{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def chat_plan(client: PlanningClient, params: Mapping[str, object], idempotency_key: str | None,
              wire: WireFormat = CHAT) -> CallPlan:
    """A non-streamed request plan on ``client`` in ``wire``'s format (chat completions, or embeddings when the
    parameters hold ``input`` and no ``messages``; checks the parameters before any I/O). A Responses API item
    (a ``/v1/responses`` line) goes through the client's own Responses format: native, or bridged to chat
    completions once the server answered 404 for ``/responses`` (`AutoResponsesWire`)."""
    if wire.name == "responses":
        from holysheep._core.wire.responses import RESPONSES

        if wire is RESPONSES:  # the registered, client-less one: this client's, which knows its server
            wire = getattr(getattr(client, "responses", None), "format", wire)
    return client.plan(wire.spec(params), idempotency_key=idempotency_key)


class _ClientSender:
    """What every client's sender shares: plans and the rate-limit memory key come from the client."""

    _client: PlanningClient

    def plan(self, params: Mapping[str, object], *, idempotency_key: str | None = None,
             wire: WireFormat = CHAT) -> CallPlan:
        return chat_plan(self._client, params, idempotency_key, wire)

    @property
    def limits_key(self) -> str | None:
        return limits_key(self._client)

    @property
    def budget(self) -> ClientBudget | None:
        """The client's ``max_cost_usd`` budget (a batch holds what it may spend from it), or None."""
        budget: ClientBudget | None = getattr(self._client, "_budget", None)
        return budget

    @property
    def hooks(self) -> HookSet | None:
        """The client's hooks (the batch reports its start, items and end to them)."""
        return self._client.config.hooks

    @property
    def tool_threads(self) -> int:
        """The client's ``tool_threads`` (agents' tool calls running at once)."""
        return self._client.config.tool_threads


class AsyncSender(_ClientSender):
    """A ``Sender`` over an ``AsyncClient`` (closing the sender closes the client when ``owns``)."""

    attempt: Callable[[Call], Coroutine[object, object, Outcome]]

    def __init__(self, client: AsyncAttemptingClient, *, owns: bool = False) -> None:
        self._client: AsyncAttemptingClient = client
        self._owns = owns
        self.attempt = client._attempt  # the client's own coroutine: no wrapper frame per attempt

    async def quota(self) -> Any:
        return await self._client.quota.retrieve()

    def reserve(self, in_flight: int) -> None:
        """Size the client's connection pool for ``in_flight`` requests at once (only ever raised)."""
        self._client.reserve_connections(in_flight)

    async def aclose(self) -> None:
        if self._owns:
            await self._client.aclose()


class ThreadSender(_ClientSender):
    """A ``Sender`` over a sync ``Client``: each attempt runs in a pool of ``max_workers`` threads."""

    def __init__(self, client: SyncAttemptingClient, max_workers: int) -> None:
        self._client: SyncAttemptingClient = client
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="holysheep-batch")

    async def attempt(self, call: Call) -> Outcome:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(self._client._attempt, call))

    async def quota(self) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._client.quota.retrieve)

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

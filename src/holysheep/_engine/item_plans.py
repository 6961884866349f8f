"""What a batch item sends next: its ``CallPlan``, and the next step of its re-ask or tool loop.

``ItemPlanner`` turns an item's parameters into the client's ``CallPlan`` (with the batch's own retry
policy when the item sets no ``max_retries``). An item with ``response_format=Model`` (or
``max_repairs``) runs parse()'s re-ask loop and an agent item (``tools=[functions]``) runs a tool loop:
each reply is fed to that loop, which either ends the item with its final completion or yields the
next request (queued as a retry, with its own idempotency key) or tool calls to run (slot-free).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from holysheep._core.call import Call
from holysheep._core.call_plan import CallPlan
from holysheep._core.hooks import BatchContext
from holysheep._core.retry import RetryPolicy
from holysheep._core.structured import plan_parse, wants_parse
from holysheep._core.tool_limits import DEFAULT_TOOL_THREADS
from holysheep._core.tool_loop import RunTools, plan_tool_loop, wants_tool_loop
from holysheep._core.wire import CHAT
from holysheep._engine.delivery import ResultSink
from holysheep._engine.requests import BatchRequest
from holysheep._engine.sender import Sender
from holysheep._engine.tool_calls import run_turn_async
from holysheep._engine.tool_pool import tool_pool
from holysheep._engine.work_queue import WorkQueue
from holysheep._exceptions import HolySheepError

__all__ = ["UNLIMITED_RETRIES", "ItemPlanner", "request_of", "stable_key"]

UNLIMITED_RETRIES = 1_000_000_000
"""The batch's own retry count when neither the batch nor the item sets ``max_retries``: transient failures
are retried until the item succeeds, ``retry_window_s`` passes, or the batch stops (an outage)."""


def request_of(item: BatchRequest) -> Mapping[str, object]:
    """The create() arguments of the item's next request. An item with `response_format=Model` (or
    `max_repairs`) runs parse()'s re-ask loop, an agent its tool loop: their requests come from that loop."""
    if item.request is not None:
        return item.request
    if item.steps is None and wants_tool_loop(item.params):  # an agent: its requests come from its loop
        item.steps = plan_tool_loop(item.params, (item.wire or CHAT).tool_turns()).steps()  # the format's turns
        item.agent = True
        item.request = next(item.steps)
        return item.request
    if item.wire is not None:  # another format (the Responses API, ...): sent as given
        return item.params
    if item.steps is None and wants_parse(item.params):
        item.steps = plan_parse({"on_refusal": "raise", **item.params}).steps()  # a refusal fails the item
        item.request = next(item.steps)
        return item.request
    if "max_repairs" in item.params:
        return {k: v for k, v in item.params.items() if k != "max_repairs"}
    return item.params


_NOT_REQUEST = frozenset({"max_retries", "timeout", "stream_idle_timeout"})
"""How a request is sent, not what it asks: no part of its idempotency key."""


def _stable_json(value: object) -> object:
    """A name for what JSON cannot hold (a pydantic model class, a function): the same in every process."""
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"


def stable_key(seed: str, custom_id: str, params: Mapping[str, object]) -> str:
    """The ``Idempotency-Key`` of an item in every run of the same input: a SHA-256 of the seed (the run's
    input), its custom_id and its parameters (the request, not an attempt), so an item re-run after an
    interruption carries the key of its interrupted attempt, and a changed item a new one."""
    request = {k: v for k, v in params.items() if k not in _NOT_REQUEST}
    canonical = json.dumps([seed, custom_id, request], sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=_stable_json)
    return "hs-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:40]


class ItemPlanner:
    """Plans each item's next request through the client's sender, and steps its re-ask or tool loop."""

    def __init__(self, sender: Sender, *, queue: WorkQueue, sink: ResultSink) -> None:
        self._sender = sender
        self._queue = queue
        self._sink = sink
        self.batch_ctx: BatchContext | None = None
        """The batch as hooks see it (None without hooks): every item's call belongs to it."""
        self.tool_tasks: set[asyncio.Task[None]] = set()
        """Agent items running their tools (cancelled when the batch is closed)."""
        self._policies: dict[RetryPolicy, RetryPolicy] = {}
        self.key_seed: str | None = None
        """``idempotency_seed``: items with a custom_id send keys derived from it (`stable_key`)."""

    def plan(self, item: BatchRequest) -> CallPlan | None:
        """The item's ``CallPlan`` (made once per request); None when its parameters are invalid: then the
        item is already finished with that error and nothing was sent."""
        plan: CallPlan | None = item.plan
        if plan is None:
            if item.key is None and self.key_seed is not None and item.custom_id is not None:
                item.key = stable_key(self.key_seed, item.custom_id, item.params)
            try:
                if item.wire is None:
                    plan = item.plan = self._sender.plan(request_of(item), idempotency_key=item.key)
                else:
                    plan = item.plan = self._sender.plan(request_of(item), idempotency_key=item.key, wire=item.wire)
                if plan.ctx is not None:
                    plan.ctx.batch = self.batch_ctx
            except Exception as exc:  # invalid parameters (InvalidRequestError), or anything else: the item
                self._sink.finalize(item, None, exc)  # ends with it; nothing was sent, the batch goes on
                return None
            self._own_policy(plan)
        return plan

    def _own_policy(self, plan: CallPlan) -> None:
        """The batch's retry policy on a call that sets no ``max_retries`` of its own (the client's count
        is for one interactive call, not for an item of a batch that must lose nothing)."""
        call: Call = plan.call
        if call.spec.options.max_retries is not None or plan.falls_back:
            return  # an explicit per-item/per-batch count, or fallbacks (the router moves on after it)
        policy = call.policy
        own = self._policies.get(policy)
        if own is None:
            own = self._policies[policy] = replace(policy, max_retries=UNLIMITED_RETRIES)
        call.policy = own

    def next_step(self, item: BatchRequest, response: object) -> object:
        """Feed a reply (or an agent's tool outcomes) to the item's loop: the final completion when it is done,
        None when a next request was queued (re-ask or next turn, with its own idempotency key), the item's
        tools are running, or the item failed."""
        try:
            step = item.steps.send(response)
        except StopIteration as stop:
            if item.agent:  # the run's result (its format's: `ToolRunResult`, `ResponseToolRunResult`, ...)
                item.tool_run = stop.value
                return (item.wire or CHAT).tool_turns().final(stop.value)  # its last reply, as the format reads it
            return stop.value
        except HolySheepError as exc:  # StructuredOutputError, RefusalError, MaxTurnsError: the item's own error
            self._sink.finalize(item, None, exc)
            return None
        if isinstance(step, RunTools):  # an agent's tool calls: run them, then queue its next turn
            task = asyncio.get_running_loop().create_task(self._run_tools(item, step))
            self.tool_tasks.add(task)
            task.add_done_callback(self.tool_tasks.discard)
            return None
        item.request = step
        item.repairs += 1
        suffix = "-turn" if item.agent else "-repair"
        base = (item.key or "").split(suffix)[0]
        item.key = f"{base}{suffix}{item.repairs + item.agent}" if base else None
        item.plan = None
        self._queue.retry_now(item)
        return None

    async def _run_tools(self, item: BatchRequest, step: RunTools) -> None:
        """Run an agent item's tool calls (concurrently; slot-free), then feed the outcomes to its loop."""
        try:
            batch = self.batch_ctx
            threads = getattr(self._sender, "tool_threads", DEFAULT_TOOL_THREADS)  # the client's tool_threads
            outcomes = await run_turn_async(step, batch.hooks if batch is not None else None, batch,
                                            tool_pool(threads))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # pragma: no cover - each call's failure is already its outcome
            self._sink.finalize(item, None, exc)
            return
        if self.next_step(item, outcomes) is not None:  # pragma: no cover - a loop never ends after tools
            raise RuntimeError("a tool loop ended right after running tools")

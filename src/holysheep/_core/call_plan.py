"""One logical call across its attempts and endpoints: the loop both client shells and the batch drive.

The shells only move bytes::

    plan = CallPlan(config, spec, router)
    while (delay := plan.after(send_one_attempt(plan.call))) is not None:
        sleep(delay)
    return plan.result()

``after`` asks the current ``Call`` for the retry decision; when that endpoint has failed for good with
an error that may fall back, it moves on to the router's next endpoint (a new ``Call`` that carries
``served_by``), with no delay.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from holysheep._core.call import Call, Outcome
from holysheep._core.config import ClientConfig
from holysheep._core.fallback import Endpoint, Router
from holysheep._core.hooks import GLOBAL, CallContext, ResponseEvent, active_hooks
from holysheep._core.request import RequestSpec
from holysheep._core.scrub import request_id_of
from holysheep._exceptions import APIError

__all__ = ["CallPlan"]


class CallPlan:
    """Drives one call: retries on the current endpoint, then the fallbacks (when a router is given)."""

    __slots__ = ("_cause", "_endpoints", "_error", "_index", "_rand", "_router", "_spec", "_value", "call", "ctx",
                 "done")

    def __init__(self, config: ClientConfig, spec: RequestSpec, router: Router | None = None, *,
                 idempotency_key: str | None = None, rand: Callable[[], float] = random.random) -> None:
        self._spec = spec
        self._router = router
        self._rand = rand
        self._index = 0
        self._value: object = None
        self._error: APIError | None = None
        self._cause: BaseException | None = None
        self.done = False
        ctx = None
        if config.hooks is not None or GLOBAL.set is not None:
            hooks = active_hooks(config.hooks)
            assert hooks is not None
            ctx = CallContext(hooks, spec.method, spec.path, spec.body, spec.stream, config.clock)
            ctx.defaulted = spec.defaulted
            ctx.wire = spec.wire
            if spec.raw == "stream" and not spec.stream:
                ctx.lazy_body = True  # the body is read after on_response: on_body_end (body_report) follows
        self.ctx = ctx
        if router is None:
            self._endpoints: Sequence[Endpoint] = ()  # shared, not a new list per call
            self.call = Call(config, spec, idempotency_key=idempotency_key, rand=rand, ctx=ctx)
        else:
            self._endpoints = router.endpoints()
            self.call = self._call_for(self._endpoints[0], config, idempotency_key)

    def _call_for(self, endpoint: Endpoint, config: ClientConfig | None, key: str | None = None) -> Call:
        assert self._router is not None
        if endpoint is not self._router.primary or config is None:
            config = endpoint.config
        return Call(config, endpoint.prepare(self._spec), served_by=endpoint.name, idempotency_key=key,
                    rand=self._rand, ctx=self.ctx)

    def after(self, outcome: Outcome) -> float | None:
        """Take an attempt's outcome; the seconds to wait before the next attempt, or None when done."""
        if outcome.retry:
            if self.ctx is not None:
                self._report(self.ctx, "retry", outcome)
            return outcome.delay
        router = self._router
        if outcome.error is None:
            if router is not None:
                router.succeeded(self._endpoints[self._index])
            self._value, self.done = outcome.value, True
            if self.ctx is not None:
                self._report(self.ctx, "success", outcome)
            return None
        if router is not None:
            is_last = self._index == len(self._endpoints) - 1
            if router.failed(self._endpoints[self._index], outcome.error, is_last):
                if self.ctx is not None:
                    self._report(self.ctx, "fallback", outcome)
                self._index += 1
                self.call = self._call_for(self._endpoints[self._index], None)
                return 0.0
        self._error, self._cause, self.done = outcome.error, outcome.cause, True
        if self.ctx is not None:
            self._report(self.ctx, "error", outcome)
        return None

    def _report(self, ctx: CallContext, kind: Any, outcome: Outcome) -> None:
        """Tell the hooks how the attempt ended (only when the call has hooks)."""
        call = self.call
        error = outcome.error
        if error is not None:
            request_id = getattr(error, "request_id", None)
        else:
            headers = call.response_headers
            request_id = request_id_of(headers, call.api_key) if headers is not None else None
        ctx.hooks.emit("on_response", ResponseEvent(
            ctx, kind, status_code=call.status_code, request_id=request_id, retries_taken=call.retries_taken,
            served_by=call.served_by, error=error, response=outcome.value,
            delay_s=outcome.delay if kind == "retry" else None))
        if kind == "success" and ctx.stream:
            ctx.go_live()  # the stream's first-chunk (and, if it already ended, end) events follow

    @property
    def falls_back(self) -> bool:
        """True when the call has fallback endpoints (a router decides when to move on)."""
        return self._router is not None

    @property
    def error(self) -> APIError | None:
        """The final error (None while running or after a success)."""
        return self._error

    def result(self) -> Any:
        """The final value, or raise the final error."""
        if self._error is not None:
            raise self._error from self._cause
        return self._value

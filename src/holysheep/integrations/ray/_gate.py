"""A replica's side of the cluster-wide limit: leases permits in chunks and gates each attempt.

`GatedSender` wraps the client's `Sender` (what the batch engine sends through): before each attempt it
takes one request permit and the request's estimated tokens from permits leased from the cluster limiter,
then delegates. After the attempt it reports back: a 429's Retry-After (pause everyone), a rejected key
(stop everyone), the first answer (the canary), and the `x-ratelimit-*` limits the server announced
(`learn`). Retries, batch pauses and outage detection stay the engine's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from holysheep._core.call import Outcome
from holysheep._core.wire import CHAT, WireFormat, wire_of
from holysheep._engine.requests import estimate_tokens as _batch_estimate
from holysheep._engine.server_limits import LEARNED_SHARE, read_limits
from holysheep._exceptions import APIStatusError, AuthenticationError
from holysheep.integrations.ray._limiter import ClusterRateLimiter, Lease

if TYPE_CHECKING:
    from holysheep._core.call import Call
    from holysheep._core.call_plan import CallPlan
    from holysheep._engine.sender import Sender

__all__ = ["GatedSender", "LimiterLink", "LocalLink", "estimate_tokens"]

_PERMIT_TTL_S = 1.0  # leased permits unused for this long are dropped, so no stale burst reaches the server


def estimate_tokens(params: Mapping[str, object] | None, wire: WireFormat | None = None) -> int:
    """The TPM charge of one request: the batch engine's estimate (prompt characters / 4 + its output limit)."""
    return _batch_estimate(params or {}, wire)


class LimiterLink(Protocol):
    """How a replica talks to the cluster limiter (a Ray actor handle in production, in-process in tests)."""

    async def lease(self, requests: int, tokens: int) -> Lease: ...
    def pause(self, seconds: float) -> None: ...
    def confirm(self) -> None: ...
    def release_canary(self) -> None: ...
    def stop(self, message: str) -> None: ...
    def learn(self, limit_requests: float | None, limit_tokens: float | None) -> None: ...


class LocalLink:
    """A `LimiterLink` over an in-process `ClusterRateLimiter` (tests, and one-process use)."""

    def __init__(self, limiter: ClusterRateLimiter) -> None:
        self.limiter = limiter
        self.lease_calls = 0

    async def lease(self, requests: int, tokens: int) -> Lease:
        self.lease_calls += 1
        return self.limiter.lease(requests, tokens)

    def pause(self, seconds: float) -> None:
        self.limiter.pause(seconds)

    def confirm(self) -> None:
        self.limiter.confirm()

    def release_canary(self) -> None:
        self.limiter.release_canary()

    def stop(self, message: str) -> None:
        self.limiter.stop(message)

    def learn(self, limit_requests: float | None, limit_tokens: float | None) -> None:
        self.limiter.learn(limit_requests, limit_tokens)


class GatedSender:
    """A `Sender` that obeys the cluster-wide limit, over the client's own `Sender` (`inner`).

    `chunk` is how many request permits one lease asks for; `token_chunk` how many tokens beyond the
    request's own. `default_pause_s` is the pause after a 429 without Retry-After.
    """

    def __init__(self, inner: Sender, link: LimiterLink, *, chunk: int = 1, token_chunk: int = 0,
                 limit_tokens: bool = False, default_pause_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._inner, self._link = inner, link
        self._chunk, self._token_chunk = max(1, chunk), max(0, token_chunk)
        self._limit_tokens = limit_tokens
        self._default_pause_s = default_pause_s
        self._clock, self._sleep = clock, sleep
        self._requests = 0
        self._tokens = 0
        self._leased_at = 0.0
        self._lock = asyncio.Lock()
        self._confirmed = False
        self._learned: tuple[float | None, float | None] = (None, None)
        self.sent = 0

    def plan(self, params: Mapping[str, object], *, idempotency_key: str | None = None,
             wire: WireFormat = CHAT) -> CallPlan:
        if wire is CHAT:  # (an inner sender of the engine's tests may take no format)
            return self._inner.plan(params, idempotency_key=idempotency_key)
        return self._inner.plan(params, idempotency_key=idempotency_key, wire=wire)

    async def quota(self) -> Any:
        return await self._inner.quota()

    @property
    def limits_key(self) -> str | None:
        return None  # the cluster limiter learns the limits; each replica's engine does not remember them

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def attempt(self, call: Call) -> Outcome:
        """Take a permit (leasing more when short), send one attempt through `inner`, report what came back."""
        try:
            await self.acquire(estimate_tokens(call.spec.body, wire_of(call.spec)) if self._charges_tokens else 0)
        except AuthenticationError as exc:  # another replica's key was rejected: end this item, send nothing
            return Outcome(error=exc)
        self.sent += 1
        outcome = await self._inner.attempt(call)
        self._learn(call.response_headers)
        error = outcome.error
        if isinstance(error, AuthenticationError):
            self._link.stop(str(error))
        elif isinstance(error, APIStatusError):
            self._answered()
            if error.status_code == 429:
                self._requests = self._tokens = 0  # hold nothing over the pause
                self._link.pause(error.retry_after if error.retry_after is not None else self._default_pause_s)
        elif error is not None:
            if not self._confirmed:
                self._link.release_canary()
        else:
            self._answered()
        return outcome

    @property
    def _charges_tokens(self) -> bool:
        """Tokens are leased when a TPM limit was configured or the server announced one."""
        return self._limit_tokens or self._learned[1] is not None

    def _learn(self, headers: Mapping[str, str] | None) -> None:
        limits = read_limits(headers)
        if limits is None:
            return
        # per minute, unless the headers show a limit over an hour or a day (Groq's requests per day)
        rpm = None if not limits.limit_requests else \
            limits.limit_requests * 60.0 / (limits.requests_window_s() or 60.0) * LEARNED_SHARE
        tpm = None if not limits.limit_tokens else \
            limits.limit_tokens * 60.0 / (limits.tokens_window_s() or 60.0) * LEARNED_SHARE
        if (rpm, tpm) != self._learned:  # tell the limiter once per change, not once per request
            self._learned = (rpm, tpm)
            self._link.learn(rpm, tpm)

    def _answered(self) -> None:
        if not self._confirmed:
            self._confirmed = True
            self._link.confirm()

    async def acquire(self, tokens: int) -> None:
        """Take one request permit and `tokens` tokens, leasing more from the cluster when short."""
        async with self._lock:
            while True:
                if self._clock() - self._leased_at > _PERMIT_TTL_S:
                    self._requests = self._tokens = 0
                if self._requests >= 1 and self._tokens >= tokens:
                    self._requests -= 1
                    self._tokens -= tokens
                    return
                want_requests = self._chunk if self._requests < 1 else 0
                want_tokens = tokens - self._tokens + self._token_chunk if self._tokens < tokens else 0
                lease = await self._link.lease(want_requests, want_tokens)
                if lease.stopped is not None:
                    raise AuthenticationError(f"{lease.stopped} (another replica's request was rejected; "
                                              "this job stops)", status_code=401)
                if lease.requests or lease.tokens:
                    self._requests += lease.requests
                    self._tokens += lease.tokens
                    self._leased_at = self._clock()
                if lease.wait_s > 0:
                    await self._sleep(lease.wait_s)

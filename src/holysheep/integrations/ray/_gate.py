"""A replica's side of the cluster-wide limit: leases permits in chunks and gates each send.

`GatedSender` wraps `client.chat.completions.create`: before each attempt it takes one request permit
and the request's estimated tokens from permits leased from the cluster limiter; it reports a 429's
Retry-After (pause everyone), a rejected key (stop everyone) and the first answer (the canary) back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from ..._exceptions import APIStatusError, AuthenticationError, PermissionDeniedError
from ...types.chat import ChatCompletion
from ._limiter import ClusterRateLimiter, Lease

__all__ = ["GatedSender", "LimiterLink", "LocalLink", "estimate_tokens"]

_DEFAULT_COMPLETION_TOKENS = 256
_PERMIT_TTL_S = 1.0  # leased permits unused for this long are dropped, so no stale burst reaches the server


def estimate_tokens(params: Mapping[str, Any]) -> int:
    """Prompt characters / 4 (rounded up) + `max_tokens` (256 when unset): the TPM charge of one request."""
    chars = 0
    for message in params.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text") or "") for p in content if isinstance(p, Mapping))
    completion = params.get("max_tokens") or params.get("max_completion_tokens")
    if not isinstance(completion, int) or isinstance(completion, bool) or completion < 0:
        completion = _DEFAULT_COMPLETION_TOKENS
    return (chars + 3) // 4 + completion


class LimiterLink(Protocol):
    """How a replica talks to the cluster limiter (a Ray actor handle in production, in-process in tests)."""

    async def lease(self, requests: int, tokens: int) -> Lease: ...
    def pause(self, seconds: float) -> None: ...
    def confirm(self) -> None: ...
    def release_canary(self) -> None: ...
    def stop(self, message: str) -> None: ...


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


class GatedSender:
    """A per-replica send function (`await sender(params)`) that obeys the cluster-wide limit.

    `chunk` is how many request permits one lease asks for; `token_chunk` how many tokens beyond the
    request's own. `default_pause_s` is the pause after a 429 without Retry-After.
    """

    def __init__(self, create: Callable[..., Awaitable[ChatCompletion]], link: LimiterLink, *, chunk: int = 1,
                 token_chunk: int = 0, limit_tokens: bool = False, default_pause_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._create, self._link = create, link
        self._chunk, self._token_chunk = max(1, chunk), max(0, token_chunk)
        self._limit_tokens = limit_tokens
        self._default_pause_s = default_pause_s
        self._clock, self._sleep = clock, sleep
        self._requests = 0
        self._tokens = 0
        self._leased_at = 0.0
        self._lock = asyncio.Lock()
        self._confirmed = False
        self.sent = 0

    async def __call__(self, params: dict[str, Any]) -> ChatCompletion:
        await self.acquire(estimate_tokens(params) if self._limit_tokens else 0)
        self.sent += 1
        try:
            response = await self._create(**params)
        except (AuthenticationError, PermissionDeniedError) as exc:
            if isinstance(exc, AuthenticationError):
                self._link.stop(str(exc))
            raise
        except APIStatusError as exc:
            self._answered()
            if exc.status_code == 429:
                self._requests = self._tokens = 0  # hold nothing over the pause
                self._link.pause(exc.retry_after if exc.retry_after is not None else self._default_pause_s)
            raise
        except Exception:
            if not self._confirmed:
                self._link.release_canary()
            raise
        self._answered()
        return response

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

"""The named Ray actor that holds the cluster-wide limit, and the replicas' link to it."""

from __future__ import annotations

import threading
import time
from typing import Any

import ray

from holysheep.integrations.ray._limiter import ClusterRateLimiter, Lease

__all__ = ["ActorLink", "limiter_actor"]

_NAMESPACE = "holysheep"
IDLE_EXIT_S = 600.0
"""A limiter actor that nobody has asked for this long ends itself (it is detached: no job owns it)."""


class _ExpiringLimiter(ClusterRateLimiter):
    """The actor class: a `ClusterRateLimiter` that ends itself once idle for `IDLE_EXIT_S`.

    It is detached, so a lazy dataset still finds it after the processor object is gone.
    """

    def __init__(self, rpm: float | None, tpm: float | None, *, burst_s: float) -> None:
        super().__init__(rpm, tpm, burst_s=burst_s)
        self._last_use = time.monotonic()
        threading.Thread(target=self._expire, name="holysheep-limiter-expiry", daemon=True).start()

    def lease(self, requests: int = 1, tokens: int = 0) -> Lease:
        self._last_use = time.monotonic()
        return super().lease(requests, tokens)

    def _expire(self) -> None:
        while time.monotonic() - self._last_use < IDLE_EXIT_S:
            time.sleep(min(30.0, IDLE_EXIT_S))
        ray.kill(ray.get_runtime_context().current_actor, no_restart=True)


def limiter_actor(name: str, *, rpm: float | None, tpm: float | None, namespace: str | None = None,
                  burst_s: float = 0.5) -> Any:
    """The named limiter actor `name`: created by the first caller, shared afterwards; it needs no CPU."""
    remote_cls = ray.remote(num_cpus=0, max_restarts=0)(_ExpiringLimiter)
    return remote_cls.options(name=name, namespace=namespace or _NAMESPACE, get_if_exists=True,
                              lifetime="detached").remote(rpm, tpm, burst_s=burst_s)


class ActorLink:
    """A `LimiterLink` over the named limiter actor; the notifications do not wait for an answer."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    @classmethod
    def named(cls, name: str | None, *, rpm: float | None, tpm: float | None, namespace: str | None = None,
              burst_s: float = 0.5) -> ActorLink:
        """The link to the limiter actor called `name` (created here if the processor's is gone)."""
        if name is None:
            raise RuntimeError("this replica has no limiter actor name")
        return cls(limiter_actor(name, rpm=rpm, tpm=tpm, namespace=namespace, burst_s=burst_s))

    async def lease(self, requests: int, tokens: int) -> Lease:
        lease: Lease = await self._handle.lease.remote(requests, tokens)
        return lease

    def pause(self, seconds: float) -> None:
        self._handle.pause.remote(seconds)

    def confirm(self) -> None:
        self._handle.confirm.remote()

    def release_canary(self) -> None:
        self._handle.release_canary.remote()

    def stop(self, message: str) -> None:
        self._handle.stop.remote(message)

    def learn(self, limit_requests: float | None, limit_tokens: float | None) -> None:
        self._handle.learn.remote(limit_requests, limit_tokens)

    def __repr__(self) -> str:
        return "<holysheep ActorLink>"

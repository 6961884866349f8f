"""The named Ray actor that holds the cluster-wide limit, and the replicas' link to it."""

from __future__ import annotations

from typing import Any

import ray

from ._limiter import ClusterRateLimiter, Lease

__all__ = ["ActorLink", "limiter_actor"]

_NAMESPACE = "holysheep"


def limiter_actor(name: str, *, rpm: float | None, tpm: float | None, namespace: str | None = None,
                  burst_s: float = 0.5) -> Any:
    """The named limiter actor `name` (created on first use, shared afterwards; it needs no CPU)."""
    remote_cls = ray.remote(num_cpus=0, max_restarts=-1)(ClusterRateLimiter)
    return remote_cls.options(name=name, namespace=namespace or _NAMESPACE, get_if_exists=True,
                              lifetime=None).remote(rpm, tpm, burst_s=burst_s)


class ActorLink:
    """A `LimiterLink` over the named limiter actor; the notifications do not wait for an answer."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    @classmethod
    def named(cls, name: str | None, namespace: str | None = None) -> ActorLink:
        """The link to the limiter actor called `name` (which the processor created)."""
        if name is None:
            raise RuntimeError("this replica has no limiter actor name")
        return cls(ray.get_actor(name, namespace=namespace or _NAMESPACE))

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

    def __repr__(self) -> str:
        return "<holysheep ActorLink>"

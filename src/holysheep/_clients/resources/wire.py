"""``client.wire(fmt)``: any `WireFormat` as a resource, with the client's retries, rate limits, hooks, cache and
batch engine (what proves the seam: a format defined outside the package needs no change here)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Mapping
from typing import TYPE_CHECKING, Generic, Protocol

from holysheep._clients.resources.chat import Executor, Resource
from holysheep._core.wire.base import WireReplyT, WireRunT

if TYPE_CHECKING:
    from holysheep._core.config import ClientConfig
    from holysheep._core.wire import WireFormat
    from holysheep._engine.results import BatchResults
    from holysheep._engine.sender import Sender

__all__ = ["AsyncWireResource", "WireResource"]


class _Client(Executor, Protocol):
    @property
    def cache(self) -> object: ...

    @property
    def config(self) -> ClientConfig: ...

    def _check_open(self) -> None: ...

    @property
    def _prices(self) -> Mapping[str, object] | None: ...


class _SyncClient(_Client, Protocol):
    def batch_sender(self, concurrency: int) -> Sender: ...


class _AsyncClient(_Client, Protocol):
    def sender(self) -> Sender: ...


class _Base(Resource):
    def __init__(self, client: _Client, wire: WireFormat) -> None:
        super().__init__(client)
        self.format = wire
        self._owner = client

    def _batch_params(self, params: Mapping[str, object]) -> Mapping[str, object]:
        from holysheep._engine.run import with_client_cache  # lazy: not loaded by `import holysheep`

        self._owner._check_open()  # a closed client sends nothing, its batch included
        return with_client_cache({**params, "wire": self.format}, self._owner.cache, self._owner._prices)


class WireResource(_Base, Generic[WireReplyT, WireRunT]):
    """``client.wire(fmt)`` on the sync client: ``create(**arguments)`` and ``batch(requests, **params)``, typed by
    the format's parameters (``client.wire(EMBEDDINGS).batch(...)``: `CreateEmbeddingResponse` results)."""

    def __init__(self, client: _SyncClient, wire: WireFormat[WireReplyT, WireRunT]) -> None:
        super().__init__(client, wire)
        self._sync = client

    def create(self, **params: object) -> WireReplyT:
        """Send one request built by the format from ``params``; its reply as the format parses it."""
        reply: WireReplyT = self._client._execute(self.format.spec(params))
        return reply

    def batch(self, requests: Iterable[object], **params: object) -> BatchResults[WireReplyT, WireRunT]:
        """Run many requests of this format through the batch engine (options as for ``chat.completions.batch``)."""
        from holysheep._engine.run import batch_sync

        return batch_sync(self._sync.batch_sender, requests, self._batch_params(params))


class AsyncWireResource(_Base, Generic[WireReplyT, WireRunT]):
    """``client.wire(fmt)`` on the async client (``await`` its methods; typed as the sync one)."""

    def __init__(self, client: _AsyncClient, wire: WireFormat[WireReplyT, WireRunT]) -> None:
        super().__init__(client, wire)
        self._async = client

    async def create(self, **params: object) -> WireReplyT:
        """Send one request built by the format from ``params``; its reply as the format parses it."""
        reply: WireReplyT = await self._client._execute(self.format.spec(params))
        return reply

    async def batch(self, requests: Iterable[object] | AsyncIterable[object],
                    **params: object) -> BatchResults[WireReplyT, WireRunT]:
        """Run many requests of this format through the batch engine."""
        from holysheep._engine.run import abatch

        return await abatch(self._async.sender(), requests, self._batch_params(params))

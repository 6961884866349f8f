"""One replica: a Ray Data actor that runs the SDK's async batch engine on each block it is given.

The actor keeps one event loop in a background thread for its whole life, so its `AsyncClient` (and the
connection pool) is shared by every block. Sends go through `GatedSender` (the cluster-wide limit).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from holysheep._engine.run import iterator_for
from holysheep._exceptions import AuthenticationError, InvalidRequestError
from holysheep.batch import BatchResult
from holysheep.integrations.ray._config import ReplicaConfig
from holysheep.integrations.ray._gate import GatedSender, LimiterLink
from holysheep.integrations.ray._rows import OUTPUT_COLUMNS, output_values

if TYPE_CHECKING:
    import pyarrow as pa

    from holysheep._clients.async_client import AsyncClient

__all__ = ["Replica", "run_rows"]

_T = TypeVar("_T")


async def run_rows(rows: list[dict[str, object]], config: ReplicaConfig, sender: GatedSender) -> list[BatchResult]:
    """Run one block's rows through the batch engine; results in row order. A rejected key raises.

    The engine paces nothing itself (`rpm`/`tpm` None): the cluster limiter behind `sender` does, and
    learns the server's announced limits for every replica at once.
    """
    spec = config.rows
    params: dict[str, object] = {**spec.params, **config.batch_options, "concurrency": config.concurrency,
                              "check_quota": False, "rpm": None, "tpm": None}
    results: list[BatchResult | None] = [None] * len(rows)
    it = iterator_for(sender, [spec.request(row) for row in rows], params, total=len(rows))
    async with it:
        async for result in it:
            results[result.index] = result
    for maybe in results:
        if maybe is not None and isinstance(maybe.error, AuthenticationError):
            raise maybe.error
    return [r if r is not None else BatchResult(i, None, error=RuntimeError("the batch did not finish this row"))
            for i, r in enumerate(results)]


class Replica:
    """The callable class given to `Dataset.map_batches` (one instance per actor)."""

    def __init__(self, config: ReplicaConfig) -> None:
        self._config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="holysheep-ray-replica", daemon=True)
        self._thread.start()
        self._client, self._sender = self._on_loop(self._setup())

    def _on_loop(self, coro: Coroutine[object, object, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _setup(self) -> tuple[AsyncClient, GatedSender]:
        from holysheep import AsyncClient

        config = self._config
        kwargs: dict[str, Any] = {"max_retries": config.max_retries, **config.client_options}
        if config.base_url is not None:
            kwargs["base_url"] = config.base_url
        if config.timeout is not None:
            kwargs["timeout"] = config.timeout
        if config.fallbacks:
            kwargs["fallbacks"] = list(config.fallbacks)
        client = AsyncClient(api_key=config.api_key.reveal(), **kwargs)
        link = self._link()
        sender = GatedSender(client.sender(), link, chunk=config.chunk,
                             token_chunk=config.token_chunk, limit_tokens=config.limit_tokens)
        return client, sender

    def _link(self) -> LimiterLink:
        from holysheep.integrations.ray._actors import ActorLink

        config = self._config
        return ActorLink.named(config.limiter_name, rpm=config.rpm, tpm=config.tpm,
                               namespace=config.limiter_namespace, burst_s=config.burst_s)

    def __call__(self, table: pa.Table) -> pa.Table:
        import pyarrow as pa

        clash = [name for name, _ in OUTPUT_COLUMNS if name in table.column_names]
        if clash:
            raise InvalidRequestError(f"the dataset already has column(s) {clash} that the processor writes; "
                                      "rename them first (ds.rename_columns({...})).", field="dataset")
        rows = table.to_pylist()
        try:
            results = self._on_loop(run_rows(rows, self._config, self._sender))
        except AuthenticationError:
            # Ray Data would hide it in a UserCodeException; the job should end with the SDK's typed error
            # (it pickles without its request/response). This actor serves only this processor, so changing
            # its own context is local to the job.
            import ray.data

            ray.data.DataContext.get_current().raise_original_map_exception = True
            raise
        values = [output_values(r) for r in results]
        for i, (name, type_name) in enumerate(OUTPUT_COLUMNS):
            table = table.append_column(pa.field(name, getattr(pa, type_name)()),
                                        pa.array([v[i] for v in values], type=getattr(pa, type_name)()))
        return table

    def __repr__(self) -> str:
        return f"<holysheep Replica model={self._config.rows.params.get('model')!r}>"

    def __del__(self) -> None:
        loop = getattr(self, "_loop", None)
        client = getattr(self, "_client", None)
        if loop is None or loop.is_closed():
            return
        try:
            if client is not None:
                asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(5)
        except Exception:
            pass
        loop.call_soon_threadsafe(loop.stop)

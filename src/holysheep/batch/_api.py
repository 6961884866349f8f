"""The batch entry points behind ``client.chat.completions.batch`` / ``batch_iter`` (sync and async)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._progress import make_progress
from ._requests import estimate_tokens, normalize_item
from ._results import BatchCancelledError, BatchInterrupted, BatchResult, BatchResults, BatchStats
from ._runner import BatchIterator, BatchOptions, QuotaFn, Send, client_sender
from ._sync import run_in_private_loop, sync_backend

if TYPE_CHECKING:
    from .._async_client import AsyncClient
    from .._client import Client

__all__ = ["abatch", "abatch_iter", "batch_sync", "iterator_for"]

_OPTION_NAMES = frozenset(f for f in BatchOptions.__dataclass_fields__)


def _split(kwargs: dict[str, Any]) -> tuple[BatchOptions, dict[str, Any]]:
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in _OPTION_NAMES}
    defaults = {k: v for k, v in kwargs.items() if v is not None}
    return BatchOptions(**options), defaults


def _sized(requests: Any) -> Sequence[Any] | None:
    return requests if isinstance(requests, Sequence) and not isinstance(requests, (str, bytes)) else None


def _estimate(items: Sequence[Any], defaults: Mapping[str, Any]) -> int:
    total = 0
    for i, item in enumerate(items):
        if isinstance(item, str):
            total += estimate_tokens({**defaults, "messages": [{"content": item}]})
        else:
            total += normalize_item(item, i, defaults).est_tokens
    return total


def iterator_for(
    send: Send,
    quota: QuotaFn | None,
    requests: Iterable[Any] | AsyncIterable[Any],
    kwargs: dict[str, Any],
    *,
    progress: Any = False,
    on_result: Callable[[BatchResult], None] | None = None,
    on_progress: Callable[[BatchStats], None] | None = None,
    total: int | None = None,
    estimated_tokens: int | None = None,
) -> BatchIterator:
    """A `BatchIterator` over ``requests``; ``kwargs`` mixes batch options and create() defaults."""
    options, defaults = _split(dict(kwargs))
    sized = _sized(requests)
    if sized is not None:
        total = len(sized) if total is None else total
        if estimated_tokens is None and options.check_quota and quota is not None:
            estimated_tokens = _estimate(sized, defaults)
    return BatchIterator(send, requests, defaults=defaults, options=options, quota=quota,
                         estimated_tokens=estimated_tokens, total=total, on_result=on_result,
                         on_progress=on_progress, progress=make_progress(progress))


def _assemble(requests: Any, sink: dict[int, BatchResult], read: int, stats: BatchStats) -> BatchResults:
    sized = _sized(requests)
    count = len(sized) if sized is not None else max(read, len(sink))
    results: list[BatchResult] = []
    for i in range(count):
        result = sink.get(i)
        if result is None:
            item = sized[i] if sized is not None else None
            cid = item.get("custom_id") if isinstance(item, Mapping) else None
            result = BatchResult(i, None if cid is None else str(cid),
                                 error=BatchCancelledError(f"item {i} did not finish: the batch was cancelled"))
        results.append(result)
    return BatchResults(results, stats)


async def _collect(it: BatchIterator, sink: dict[int, BatchResult]) -> None:
    async with it:
        async for result in it:
            sink[result.index] = result


async def abatch(client: AsyncClient, requests: Iterable[Any] | AsyncIterable[Any], **kwargs: Any) -> BatchResults:
    """Run a batch on an AsyncClient and return every result in input order."""
    it = abatch_iter(client, requests, **kwargs)
    sink: dict[int, BatchResult] = {}
    await _collect(it, sink)
    return _assemble(requests, sink, it.read_count, it.stats)


def abatch_iter(client: AsyncClient, requests: Iterable[Any] | AsyncIterable[Any], **kwargs: Any) -> BatchIterator:
    """A `BatchIterator` for an AsyncClient."""
    hooks = {k: kwargs.pop(k) for k in ("progress", "on_result", "on_progress") if k in kwargs}
    return iterator_for(client_sender(client.chat.completions.create), client.quota.retrieve, requests, kwargs,
                        **hooks)


def batch_sync(client: Client, requests: Iterable[Any], **kwargs: Any) -> BatchResults:
    """Run a batch for the sync client on a private loop in a worker thread (safe inside Jupyter).

    Ctrl-C stops dispatching, cancels what is in flight and raises `BatchInterrupted` with the
    partial results.
    """
    hooks = {k: kwargs.pop(k) for k in ("progress", "on_result", "on_progress") if k in kwargs}
    concurrency = kwargs.get("concurrency", BatchOptions.concurrency)
    _split(dict(kwargs))  # validate options before starting a thread
    sink: dict[int, BatchResult] = {}
    holder: dict[str, BatchIterator] = {}

    async def main() -> None:
        send, quota, close = await sync_backend(client, concurrency if isinstance(concurrency, int) else 16)
        try:
            it = holder["it"] = iterator_for(send, quota, requests, kwargs, **hooks)
            await _collect(it, sink)
        finally:
            await close()

    try:
        run_in_private_loop(main)
    except KeyboardInterrupt:
        it = holder.get("it")
        stats = it.stats if it is not None else BatchStats()
        stats.stop_reason = stats.stop_reason or "interrupted (Ctrl-C)"
        raise BatchInterrupted(_assemble(requests, sink, it.read_count if it else 0, stats)) from None
    it = holder["it"]
    return _assemble(requests, sink, it.read_count, it.stats)

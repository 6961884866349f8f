"""The engine's entry points behind ``client.chat.completions.batch`` / ``batch_iter`` (sync and async).

They take the client's ``BatchParams`` as one mapping, check every option and the shape of
``requests`` before any request, and run the engine over a ``Sender`` the client hands in (the engine
never imports a client).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from holysheep._core.wire import CHAT, WireFormat
from holysheep._engine.fd_limit import ensure_open_files
from holysheep._engine.iterator import BatchIterator
from holysheep._engine.options import batch_wire, check_requests, split_params
from holysheep._engine.private_loop import run_in_private_loop
from holysheep._engine.progress import make_progress
from holysheep._engine.requests import estimate_tokens, normalize_item
from holysheep._engine.results import (
    BatchCancelledError,
    BatchInterrupted,
    BatchResult,
    BatchResults,
    BatchStats,
    ReplyT,
    ToolRunT,
)
from holysheep._engine.spend import check_priced

if TYPE_CHECKING:
    from holysheep._engine.sender import Sender

__all__ = ["abatch", "batch_sync", "iterator_for"]


def _sized(requests: object) -> Sequence[object] | None:
    return requests if isinstance(requests, Sequence) and not isinstance(requests, (str, bytes)) else None


ESTIMATE_SAMPLE = 256
"""Inputs longer than this get their token estimate (for the quota check) from an even sample of this size."""


def _estimate(items: Sequence[object], defaults: Mapping[str, object], *, exact: bool = False,
              wire: WireFormat | None = None) -> int:
    """Estimated tokens of the whole input: every item when ``exact`` (``require_quota``) or the input is short,
    else an even sample scaled up (the estimate is chars/4 + max_tokens anyway; this keeps it off the hot path)."""
    n = len(items)
    step = 1 if exact or n <= ESTIMATE_SAMPLE else n / ESTIMATE_SAMPLE
    picks = range(n) if step == 1 else (int(k * step) for k in range(ESTIMATE_SAMPLE))
    total = count = 0
    for i in picks:
        item = items[i]
        if isinstance(item, str) and wire is None:
            total += estimate_tokens({**defaults, **CHAT.prompt_params(item)})
        else:
            total += normalize_item(item, i, defaults, wire=wire).est_tokens
        count += 1
    return total if step == 1 else round(total * n / count)


def _models(items: Sequence[object], defaults: Mapping[str, object], wire: WireFormat | None = None) -> set[str]:
    """The models a sized input names (items that are not valid are left to fail on their own)."""
    default = defaults.get("model")
    models: set[str] = set()
    for i, item in enumerate(items):
        if isinstance(item, (str, list, tuple)):
            model = default
        else:
            request = normalize_item(item, i, defaults, wire=wire)
            model = request.params.get("model") if request.invalid is None else None
        if model:
            models.add(str(model))
    return models


def with_client_cache(params: Mapping[str, object], cache: object,
                      prices: Mapping[str, object] | None = None) -> Mapping[str, object]:
    """The batch's params with the client's response cache when the batch names none, and the client's
    ``prices=`` under the batch's own (a batch on a capped client is priced as the client is)."""
    if prices and params.get("max_cost_usd") is not None:
        own = params.get("prices")
        params = {**params, "prices": {**prices, **(own if isinstance(own, Mapping) else {})}}
    if cache is None or params.get("cache") is not None:
        return params
    return {**params, "cache": cache}


def iterator_for(sender: Sender, requests: Iterable[object] | AsyncIterable[object], params: Mapping[str, object], *,
                 total: int | None = None, estimated_tokens: int | None = None) -> BatchIterator[ReplyT, ToolRunT]:
    """A ``BatchIterator`` over ``requests``; ``params`` are ``BatchParams`` (options, hooks, defaults)."""
    check_requests(requests)
    options, hooks, defaults = split_params(params)
    wire = batch_wire(params)
    ensure_open_files(options.concurrency)  # raised up to the hard limit, or refused before any request
    reserve = getattr(sender, "reserve", None)
    if reserve is not None:  # the pool holds `concurrency` connections: no silent cap below it
        reserve(options.concurrency)
    sized = _sized(requests)
    if sized is not None:
        if options.max_cost_usd is not None:
            check_priced(_models(sized, defaults, wire), options.prices)
        total = len(sized) if total is None else total
        if estimated_tokens is None and options.check_quota:
            estimated_tokens = _estimate(sized, defaults, exact=options.require_quota, wire=wire)
    return BatchIterator(sender, requests, defaults=defaults, options=options, estimated_tokens=estimated_tokens,
                         wire=wire, total=total, on_result=hooks.on_result, on_progress=hooks.on_progress,
                         progress=make_progress(hooks.progress))


def _assemble(requests: object, sink: dict[int, BatchResult[ReplyT, ToolRunT]], read: int,
              stats: BatchStats) -> BatchResults[ReplyT, ToolRunT]:
    sized = _sized(requests)
    count = len(sized) if sized is not None else max(read, len(sink))
    results: list[BatchResult[ReplyT, ToolRunT]] = []
    for i in range(count):
        result = sink.get(i)
        if result is None:
            item = sized[i] if sized is not None else None
            cid = item.get("custom_id") if isinstance(item, Mapping) else None
            result = BatchResult(i, None if cid is None else str(cid),
                                 error=BatchCancelledError(f"item {i} did not finish: the batch was cancelled"))
        results.append(result)
    return BatchResults(results, stats)


async def _collect(it: BatchIterator[ReplyT, ToolRunT], sink: dict[int, BatchResult[ReplyT, ToolRunT]]) -> None:
    async with it:
        async for result in it:
            sink[result.index] = result


async def abatch(sender: Sender, requests: Iterable[object] | AsyncIterable[object],
                 params: Mapping[str, object]) -> BatchResults[ReplyT, ToolRunT]:
    """Run a batch through ``sender`` (an ``AsyncClient``'s) and return every result in input order."""
    it: BatchIterator[ReplyT, ToolRunT] = iterator_for(sender, requests, params)
    sink: dict[int, BatchResult[ReplyT, ToolRunT]] = {}
    await _collect(it, sink)
    return _assemble(requests, sink, it.read_count, it.stats)


def batch_sync(make_sender: Callable[[int], Sender], requests: Iterable[object],
               params: Mapping[str, object]) -> BatchResults[ReplyT, ToolRunT]:
    """Run a batch for the sync client on a private loop in a worker thread (safe inside Jupyter);
    ``make_sender(concurrency)`` gives the client's ``Sender``, built inside that loop.

    Ctrl-C stops dispatching, cancels what is in flight and raises ``BatchInterrupted`` with the
    partial results.
    """
    check_requests(requests)
    options, _, defaults = split_params(params)  # every option checked before a thread or a request
    if "tools" in defaults:  # read once: a generator of tools would be empty when the batch splits them again
        params = {**params, "tools": defaults["tools"]}
    sized = _sized(requests)
    if options.max_cost_usd is not None and sized is not None:
        check_priced(_models(sized, defaults, batch_wire(params)), options.prices)
    sink: dict[int, BatchResult[ReplyT, ToolRunT]] = {}
    holder: dict[str, BatchIterator[ReplyT, ToolRunT]] = {}

    async def main() -> None:
        sender = make_sender(options.concurrency)
        try:
            it = holder["it"] = iterator_for(sender, requests, params)
            await _collect(it, sink)
        finally:
            await sender.aclose()

    try:
        run_in_private_loop(main)
    except KeyboardInterrupt:
        it = holder.get("it")
        stats = it.stats if it is not None else BatchStats()
        stats.stop_reason = stats.stop_reason or "interrupted (Ctrl-C)"
        raise BatchInterrupted(_assemble(requests, sink, it.read_count if it else 0, stats)) from None
    it = holder["it"]
    return _assemble(requests, sink, it.read_count, it.stats)

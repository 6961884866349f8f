"""Running the async engine for the sync client: a private event loop in a worker thread.

That works in a plain script and inside a running loop (Jupyter) alike, and leaves the main thread
free to receive Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib.util
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ._runner import QuotaFn, Send, client_sender

if TYPE_CHECKING:
    from .._async_client import AsyncClient
    from .._client import Client

__all__ = ["clone_async_client", "run_in_private_loop", "sync_backend"]

T = TypeVar("T")
Close = Callable[[], Awaitable[None]]


def clone_async_client(client: Client) -> AsyncClient:
    """An `AsyncClient` with the same configuration as the sync ``client``."""
    from .._async_client import AsyncClient

    factory = getattr(AsyncClient, "_from_config", None)
    if callable(factory):
        clone: AsyncClient = factory(client._config)
        return clone
    config = client._config
    accepted = inspect.signature(AsyncClient.__init__).parameters
    kwargs: dict[str, Any] = {}
    if "http_backend" in accepted and importlib.util.find_spec("aiohttp") is not None:
        kwargs["http_backend"] = "aiohttp"  # far less CPU per request than httpx's async pool
    for f in dataclasses.fields(config):
        if f.name not in accepted or f.name == "http_client":
            continue
        value = getattr(config, f.name)
        if f.name == "api_key":
            value = value.reveal() or ""  # "" (not None): a keyless client must not pick up HOLYSHEEP_API_KEY
        elif f.name == "base_url":
            value = str(value)
        kwargs[f.name] = value
    return AsyncClient(**kwargs)


async def sync_backend(client: Client, concurrency: int) -> tuple[Send, QuotaFn, Close]:
    """How the sync client's batch sends: a cloned AsyncClient (its own pool; aiohttp when installed), or,
    when the client was given its own ``http_client`` or has fallbacks, a thread pool over the sync
    client (so that transport, and its circuit breaker state, are used)."""
    if client._owns_http and getattr(client, "_router", None) is None:
        aclient = clone_async_client(client)
        return client_sender(aclient.chat.completions.create), aclient.quota.retrieve, aclient.aclose
    pool = ThreadPoolExecutor(max_workers=concurrency + 1, thread_name_prefix="holysheep-batch")
    loop = asyncio.get_running_loop()
    create = client.chat.completions.create

    async def send(params: dict[str, Any]) -> Any:
        return await loop.run_in_executor(pool, functools.partial(create, **params))

    async def quota() -> Any:
        return await loop.run_in_executor(pool, client.quota.retrieve)

    async def close() -> None:
        pool.shutdown(wait=False, cancel_futures=True)

    return send, quota, close


def run_in_private_loop(factory: Callable[[], Coroutine[Any, Any, T]], *, grace_s: float = 10.0) -> T:
    """Run ``factory()`` to completion on a new event loop in a worker thread and return its value.

    On Ctrl-C in the calling thread the coroutine is cancelled, the worker is given ``grace_s`` to
    wind down (a second Ctrl-C stops waiting), and the ``KeyboardInterrupt`` propagates.
    """
    loop = asyncio.new_event_loop()
    state: dict[str, Any] = {}
    started = threading.Event()

    def runner() -> None:
        try:
            asyncio.set_event_loop(loop)
            task = loop.create_task(factory())
            state["task"] = task
            started.set()
            state["value"] = loop.run_until_complete(task)
        except BaseException as exc:
            state["error"] = exc
        finally:
            started.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    thread = threading.Thread(target=runner, name="holysheep-batch-loop", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.05)
    except KeyboardInterrupt:
        started.wait(1.0)
        task = state.get("task")
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        thread.join(grace_s)
        raise
    if "error" in state:
        error: BaseException = state["error"]
        raise error
    value: T = state["value"]
    return value

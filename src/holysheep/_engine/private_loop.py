"""Running the async engine for sync callers: a private event loop in a worker thread.

That works in a plain script and inside a running loop (Jupyter) alike, and leaves the main thread
free to receive Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_in_private_loop"]

T = TypeVar("T")


def run_in_private_loop(factory: Callable[[], Coroutine[object, object, T]], *, grace_s: float = 10.0) -> T:
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

    # The caller's context variables (its current tracing span, for one) go along to the batch's thread.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(runner,), name="holysheep-batch-loop",
                              daemon=True)
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

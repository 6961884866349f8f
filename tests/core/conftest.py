"""Shared helpers for client-core tests: a fake key, canned bodies, and a sync/async runner."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from holysheep import AsyncClient, Client

KEY = "hs_TestKey0123456789abcdefWXYZ"
BASE = "https://api.holysheep.ai/v1"

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "deepseek-v3.2",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    "brand_new_field": {"kept": True},
}

MESSAGES = [{"role": "user", "content": "Hi"}]


def run(kind: str, fn: Callable[[Any], Any], **client_kwargs: Any) -> Any:
    """Run ``fn(client)`` with a sync Client or (awaiting it) an AsyncClient."""
    client_kwargs.setdefault("api_key", KEY)
    if kind == "sync":
        with Client(**client_kwargs) as client:
            return fn(client)

    async def main() -> Any:
        async with AsyncClient(**client_kwargs) as client:
            result = fn(client)
            return await result if inspect.isawaitable(result) else result

    return asyncio.run(main())

"""Helpers for structured-output tests: canned completions and a sync/async ``parse`` runner."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from holysheep import AsyncClient, Client

from ..core.conftest import BASE, KEY

URL = f"{BASE}/chat/completions"
MESSAGES = [{"role": "user", "content": "Extract the person: Ann is 31."}]


def completion(content: str | None, *, finish: str = "stop", refusal: str | None = None, prompt: int = 10,
               completion_tokens: int = 5, model: str = "gpt-4.1", **message: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content, **message}
    if refusal is not None:
        msg["refusal"] = refusal
    return {"id": "chatcmpl-p", "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                      "total_tokens": prompt + completion_tokens}}


def reply(content: str | None, request_id: str = "req_p", **kwargs: Any) -> httpx.Response:
    return httpx.Response(200, json=completion(content, **kwargs), headers={"x-request-id": request_id})


def body_of(request: httpx.Request) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(request.content)
    return data


def parse(kind: str, **kwargs: Any) -> Any:
    """``client.chat.completions.parse(**kwargs)`` with the sync Client or the AsyncClient."""
    kwargs.setdefault("model", "gpt-4.1")
    kwargs.setdefault("messages", MESSAGES)
    if kind == "sync":
        with Client(api_key=KEY, initial_retry_delay=0) as client:
            return client.chat.completions.parse(**kwargs)

    async def main() -> Any:
        async with AsyncClient(api_key=KEY, initial_retry_delay=0) as client:
            return await client.chat.completions.parse(**kwargs)

    return asyncio.run(main())

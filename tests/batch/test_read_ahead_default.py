"""docs/batch.md: `batch_iter` reads its input with a bounded read-ahead, ``max(2 x concurrency + 64, 128)``
items not yet delivered. A consumer that takes one result and then nothing: the batch reads and sends that one
and exactly the read-ahead more, then waits (at the default concurrency of 16: 128; at 100: 264)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep.testing import FakeServer

from .conftest import MODEL, async_client, chat_requests


@pytest.mark.parametrize(("options", "expected"), [({}, 128), ({"concurrency": 100}, 264)])
async def test_a_consumer_that_stops_taking_leaves_the_input_read_up_to_the_read_ahead(
        options: dict[str, Any], expected: int) -> None:
    read = 0

    def prompts() -> Iterator[str]:
        nonlocal read
        for i in range(10_000):
            read += 1
            yield f"p{i}"

    with FakeServer() as server:
        async with async_client(server) as client, \
                client.chat.completions.batch_iter(prompts(), model=MODEL, **options) as it:
            first = await it.__anext__()  # the engine starts with the first take
            assert first.ok
            expected += 1  # the one delivered
            for _ in range(500):  # until the batch has sent what it read (a hang guard, not a timing)
                if len(chat_requests(server)) >= expected and server.in_flight == 0:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # room for a read past the bound, were there one
            assert read == expected and len(chat_requests(server)) == expected

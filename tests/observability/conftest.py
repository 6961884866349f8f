"""Fixtures for the hook and OpenTelemetry tests: a FakeServer and a hook that records every event."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holysheep import Hooks
from holysheep.testing import FakeServer

MODEL = "gpt-4.1"
MESSAGES = [{"role": "user", "content": "Hi"}]


class Recorder(Hooks):
    """Keeps every event as (method name, event)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def of(self, name: str) -> list[Any]:
        return [e for n, e in self.events if n == name]

    def on_request(self, event: Any) -> None:
        self.events.append(("on_request", event))

    def on_response(self, event: Any) -> None:
        self.events.append(("on_response", event))

    def on_stream_first_chunk(self, event: Any) -> None:
        self.events.append(("on_stream_first_chunk", event))

    def on_stream_end(self, event: Any) -> None:
        self.events.append(("on_stream_end", event))

    def on_body_end(self, event: Any) -> None:
        self.events.append(("on_body_end", event))

    def on_batch_start(self, event: Any) -> None:
        self.events.append(("on_batch_start", event))

    def on_batch_item(self, event: Any) -> None:
        self.events.append(("on_batch_item", event))

    def on_batch_end(self, event: Any) -> None:
        self.events.append(("on_batch_end", event))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()

"""Fakes shared by several test folders: time and stores that tests drive exactly."""

from __future__ import annotations

from typing import Protocol

from holysheep.cache import MemoryCache


class Advancing(Protocol):
    def advance(self, seconds: float) -> None: ...


class TimedStore(MemoryCache):
    """A response-cache store whose every lookup takes ``seconds`` (0.125) on ``clock``."""

    def __init__(self, clock: Advancing, seconds: float = 0.125) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def get(self, key: str) -> bytes | None:
        self.clock.advance(self.seconds)
        return super().get(key)

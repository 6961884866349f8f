"""``with`` and ``async with`` for everything that holds a connection: one ``close()`` each, no copies."""

from __future__ import annotations

from types import TracebackType

from typing_extensions import Self

__all__ = ["AsyncClosing", "SyncClosing"]


class SyncClosing:
    """``with obj:`` calls ``obj.close()`` on the way out, whatever happened inside."""

    def close(self) -> None:  # pragma: no cover - every user defines it
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class AsyncClosing:
    """``async with obj:`` awaits ``obj.close()`` on the way out, whatever happened inside."""

    async def close(self) -> None:  # pragma: no cover - every user defines it
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

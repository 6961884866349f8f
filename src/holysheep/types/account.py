"""Models and quota response models."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from holysheep.types._base import HolySheepModel
from holysheep.types.chat import _ResponseMeta

__all__ = ["Model", "ModelList", "Quota"]


class Model(HolySheepModel):
    """A model the API serves."""

    id: str
    created: int | float | None = None  # Unix seconds; some servers (transformers serve) send a float
    object: str = "model"
    owned_by: str | None = None
    shutdown_date: str | None = None


class ModelList(_ResponseMeta):
    """The ``GET /models`` page, as openai-python's ``SyncPage[Model]``: ``data`` holds the models, and the page
    iterates, indexes and counts them (``for m in client.models.list()``). The API returns one page."""

    _openai_name = "SyncPage[Model]"

    data: list[Model] = []
    object: str = "list"

    def __iter__(self) -> Iterator[Model]:  # type: ignore[override]  # the models, as openai's pages
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> Model:
        return self.data[index]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, list):  # holysheep < 3 returned a plain list
            return self.data == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def has_next_page(self) -> bool:
        """Always False: ``GET /models`` returns every model in one page."""
        return False

    def iter_pages(self) -> Iterator[ModelList]:
        """This page (the only one)."""
        yield self

    def _get_page_items(self) -> list[Model]:
        return self.data


class Quota(HolySheepModel):
    """The account's quota (``GET /quota``). Fields the server adds are kept as extra attributes."""

    object: str = "quota"
    remaining: float | None = None
    limit: float | None = None
    used: float | None = None
    unit: str | None = None
    reset_at: int | str | None = None

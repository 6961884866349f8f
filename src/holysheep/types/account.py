"""Models and quota response models."""

from __future__ import annotations

from holysheep.types._base import HolySheepModel

__all__ = ["Model", "ModelList", "Quota"]


class Model(HolySheepModel):
    """A model the API serves."""

    id: str
    object: str = "model"
    created: int | float | None = None  # Unix seconds; some servers (transformers serve) send a float
    owned_by: str | None = None


class ModelList(HolySheepModel):
    """The ``GET /models`` envelope."""

    object: str = "list"
    data: list[Model] = []


class Quota(HolySheepModel):
    """The account's quota (``GET /quota``). Fields the server adds are kept as extra attributes."""

    object: str = "quota"
    remaining: float | None = None
    limit: float | None = None
    used: float | None = None
    unit: str | None = None
    reset_at: int | str | None = None

"""Base class of every response model: lenient (unknown fields kept), with ``to_dict``/``to_json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["HolySheepModel"]


class HolySheepModel(BaseModel):
    """A response object. Unknown fields from the server are kept (``model_extra``) and round-trip."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=(), defer_build=True)

    def to_dict(self, *, mode: Literal["python", "json"] = "python", exclude_unset: bool = True) -> dict[str, Any]:
        """The object as a plain dict (only the fields the server sent, unless ``exclude_unset=False``)."""
        return self.model_dump(mode=mode, exclude_unset=exclude_unset, by_alias=True)

    def to_json(self, *, indent: int | None = 2, exclude_unset: bool = True) -> str:
        """The object as JSON text."""
        return self.model_dump_json(indent=indent, exclude_unset=exclude_unset, by_alias=True)

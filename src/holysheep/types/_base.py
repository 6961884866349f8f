"""Base class of every response model: lenient (unknown fields kept), with ``to_dict``/``to_json``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["HolySheepModel"]


class HolySheepModel(BaseModel):
    """A response object. Unknown fields from the server are kept (``model_extra``) and round-trip."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=(), defer_build=True)

    _openai_name: ClassVar[str | None] = None
    """openai-python's name for this class where it differs (its ``repr`` and ``str`` show that name)."""
    _shown_if_sent: ClassVar[frozenset[str]] = frozenset()
    """Fields openai-python does not declare: its objects show them (as extras) only when the server sent them,
    and so do these, after openai's fields."""

    def __repr_name__(self) -> str:
        return self._openai_name or type(self).__name__

    def __repr_args__(self) -> Iterator[tuple[str | None, object]]:
        hidden = self._shown_if_sent
        if not hidden:
            yield from super().__repr_args__()
            return
        sent = self.model_fields_set
        for name, value in super().__repr_args__():
            if name not in hidden or name in sent:
                yield name, value

    def __str__(self) -> str:
        """As openai-python's objects print: ``CompletionUsage(completion_tokens=5, prompt_tokens=9, ...)``."""
        args = ", ".join(repr(value) if name is None else f"{name}={value!r}" for name, value in self.__repr_args__())
        return f"{self.__repr_name__()}({args})"

    def to_dict(self, *, mode: Literal["python", "json"] = "python", exclude_unset: bool = True) -> dict[str, Any]:
        """The object as a plain dict (only the fields the server sent, unless ``exclude_unset=False``)."""
        return self.model_dump(mode=mode, exclude_unset=exclude_unset, by_alias=True)

    def to_json(self, *, indent: int | None = 2, exclude_unset: bool = True) -> str:
        """The object as JSON text."""
        return self.model_dump_json(indent=indent, exclude_unset=exclude_unset, by_alias=True)

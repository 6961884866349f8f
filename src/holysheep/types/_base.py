"""Base class of every response model: lenient (unknown fields kept), with ``to_dict``/``to_json``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["HolySheepModel", "sum_counts", "sum_usages"]

_M = TypeVar("_M", bound=BaseModel)
_A = TypeVar("_A", bound="_Adds")


class _Adds(Protocol):
    def __add__(self: _A, other: _A) -> _A: ...


def sum_counts(kind: type[_M], usages: Sequence[BaseModel], **fixed: object) -> _M:
    """``usages`` (usage objects of one format) added up as one ``kind``: each declared count summed (an int
    field, or a float one), each nested breakdown (``prompt_tokens_details``, ``output_tokens_details``, ...)
    summed the same way over the usages that carry it; a field no usage sets keeps ``kind``'s default (None
    stays None); ``fixed``: fields set as given (a total worked out by the caller). Fields a server added beyond
    the type (``model_extra``) are not summed."""
    return kind.model_validate({**_summed(usages), **fixed})


def _summed(usages: Sequence[BaseModel]) -> dict[str, object]:
    """The summed fields of `sum_counts`, as the dict ``kind`` validates (a breakdown as a dict)."""
    out: dict[str, object] = {}
    for name in type(usages[0]).model_fields if usages else ():
        present = [v for v in (getattr(u, name, None) for u in usages) if v is not None]
        if not present:
            continue
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            out[name] = sum(present)
        elif all(isinstance(v, BaseModel) for v in present):
            out[name] = _summed(present)
    return out


def sum_usages(usages: Iterable[_A | None]) -> _A | None:
    """The usages (each a usage type that adds with ``+``, as `CompletionUsage` and `ResponseUsage` do) added up;
    None when there is none (a reply without usage adds nothing)."""
    total: _A | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total


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

""""Not given": holysheep's ``NOT_GIVEN``/``omit`` and openai-python's (``openai.NOT_GIVEN``, ``openai.omit``,
``openai.not_given``), recognised by class without importing openai (an optional dependency). Frameworks that
drive an openai client (openai-agents, pydantic-ai) pass them for every parameter they leave out; every public
method drops them, as openai-python does, so the argument counts as not passed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeVar

__all__ = ["NOT_GIVEN", "NotGiven", "Omit", "given", "is_not_given", "not_given", "omit", "or_default"]

_T = TypeVar("_T")


class NotGiven:
    """The "not given" sentinel (openai-python's ``NOT_GIVEN``): a parameter passed as ``NOT_GIVEN`` counts as
    not passed (its default applies). Falsy."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


class Omit:
    """openai-python's ``omit``: the parameter is left out of the request. Falsy."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "omit"


NOT_GIVEN = NotGiven()
not_given = NOT_GIVEN
omit = Omit()

_OPENAI_NAMES = frozenset({"NotGiven", "Omit"})
_KNOWN: dict[type, bool] = {NotGiven: True, Omit: True}
"""Each type seen, and whether it is a sentinel (openai's are found by class name and module on first sight)."""


def is_not_given(value: object) -> bool:
    """Whether ``value`` is holysheep's or openai-python's ``NOT_GIVEN``/``omit``."""
    cls = type(value)
    known = _KNOWN.get(cls)
    if known is None:
        module = getattr(cls, "__module__", "") or ""
        known = cls.__name__ in _OPENAI_NAMES and module.partition(".")[0] == "openai"
        if len(_KNOWN) < 256:  # bounded: a caller cannot grow it without end with fresh classes
            _KNOWN[cls] = known
    return known


def given(params: Mapping[str, _T]) -> Mapping[str, _T]:
    """``params`` without the keys passed as "not given" (the same mapping when there is none: no copy)."""
    known = _KNOWN
    for value in params.values():
        flag = known.get(type(value))  # inlined: this runs on every request
        if flag is False:
            continue
        if flag or is_not_given(value):
            return {key: v for key, v in params.items() if not is_not_given(v)}
    return params


def or_default(value: _T, default: _T) -> _T:
    """``default`` when ``value`` is "not given", else ``value`` (for the explicit parameters of a method)."""
    return default if is_not_given(value) else value

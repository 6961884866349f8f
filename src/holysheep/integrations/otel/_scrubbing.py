"""The tracer the hooks use: every span name, attribute, event and status passes the egress scrubber.

It wraps the OpenTelemetry tracer, so an attribute added to the hooks later is scrubbed too: nothing reaches
a span without passing `holysheep._egress.scrub`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span, Status, Tracer

from holysheep._egress import scrub, scrub_json

__all__ = ["ScrubbingSpan", "ScrubbingTracer", "clean_attributes"]


_SEQUENCES = (list, tuple)
_PRIMITIVES = frozenset((bool, int, float))


def clean_attributes(attrs: Mapping[str, object] | None) -> dict[str, Any] | None:
    """``attrs`` with every string (inside sequences too) scrubbed; sequences stay tuples. An attribute's sequence
    holds primitives only (OpenTelemetry drops any other), so its strings are scrubbed one by one; anything deeper
    goes through `scrub_json`. A copy whose strings and sequences are replaced, no ``X | Y`` built per value: this
    runs twice per traced call."""
    if attrs is None:
        return None
    clean = dict(attrs)
    for key, value in attrs.items():
        if type(value) is str:
            clean[key] = scrub(value)
        elif isinstance(value, _SEQUENCES):
            clean[key] = tuple(scrub(item) if type(item) is str else item if type(item) in _PRIMITIVES else
                               scrub_json(item) for item in value)
    return clean


class ScrubbingSpan:
    """A span whose every write is scrubbed; ``span`` is the real one (to put in a context)."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def set_attribute(self, key: str, value: Any) -> None:
        attrs = clean_attributes({key: value})
        assert attrs is not None
        self.span.set_attribute(key, attrs[key])

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.span.set_attributes(clean_attributes(attributes) or {})

    def add_event(self, name: str, attributes: Mapping[str, object] | None = None,
                  timestamp: int | None = None) -> None:
        self.span.add_event(scrub(name), clean_attributes(attributes), timestamp)

    def set_status(self, status: Status) -> None:
        description = status.description
        self.span.set_status(Status(status.status_code, scrub(description)) if description else status)

    def end(self, end_time: int | None = None) -> None:
        self.span.end(end_time)


class ScrubbingTracer:
    """``start_span`` of the wrapped tracer, with the name and attributes scrubbed; returns a `ScrubbingSpan`."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    def start_span(self, name: str, context: Any = None, kind: object = None,
                   attributes: Mapping[str, object] | None = None,
                   start_time: int | None = None) -> ScrubbingSpan:
        options: dict[str, Any] = {} if kind is None else {"kind": kind}
        span = self._tracer.start_span(scrub(name), context=context, attributes=clean_attributes(attributes),
                                       start_time=start_time, **options)
        return ScrubbingSpan(span)

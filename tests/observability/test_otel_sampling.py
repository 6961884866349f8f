"""Sampling, the documented way to pay for fewer spans: a batch's items follow their batch's sampling decision,
and a call follows its caller's, so a ``TraceIdRatioBased`` sampler keeps or drops whole batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, TraceState
from opentelemetry.util.types import Attributes

from holysheep import Client
from holysheep.integrations.otel import HolySheepInstrumentor
from holysheep.testing import FakeServer

from .conftest import MODEL


class _Alternating(Sampler):
    """Root spans: keep, drop, keep, ... (what a ratio sampler does, without the randomness); every root name
    is noted, so a test sees how many sampling decisions were taken at the root."""

    def __init__(self) -> None:
        self.roots: list[str] = []

    def should_sample(self, parent_context: Context | None, trace_id: int, name: str,
                      kind: SpanKind | None = None, attributes: Attributes = None,
                      links: Sequence[Link] | None = None, trace_state: TraceState | None = None) -> SamplingResult:
        self.roots.append(name)
        keep = len(self.roots) % 2 == 1
        return SamplingResult(Decision.RECORD_AND_SAMPLE if keep else Decision.DROP, attributes)

    def get_description(self) -> str:
        return "alternating"


@pytest.fixture
def traced() -> Any:
    exporter = InMemorySpanExporter()
    root = _Alternating()
    provider = TracerProvider(sampler=ParentBased(root))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    inst = HolySheepInstrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        yield exporter, root
    finally:
        inst.uninstrument()


def test_a_batch_is_kept_or_dropped_whole(traced: Any, server: FakeServer) -> None:
    exporter, root = traced
    with Client(api_key=server.api_key, base_url=server.url) as client:
        kept = client.chat.completions.batch(["a", "b", "c", "d"], model=MODEL, concurrency=2, check_quota=False)
        dropped = client.chat.completions.batch(["e", "f", "g"], model=MODEL, concurrency=2, check_quota=False)
    assert [r.ok for r in kept] == [True] * 4 and [r.ok for r in dropped] == [True] * 3
    assert root.roots == ["holysheep.batch", "holysheep.batch"]  # items never reach the root sampler
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == ["chat " + MODEL] * 4 + ["holysheep.batch"]
    (batch,) = [s for s in spans if s.name == "holysheep.batch"]
    assert batch.attributes is not None and batch.attributes["holysheep.batch.total"] == 4
    assert {s.context.trace_id for s in spans} == {batch.context.trace_id}
    assert len(server.requests) == 7  # the dropped batch's calls were still all sent


def test_a_call_follows_its_callers_decision(traced: Any, server: FakeServer) -> None:
    exporter, root = traced
    tracer = TracerProvider(sampler=ParentBased(root)).get_tracer("app")
    with Client(api_key=server.api_key, base_url=server.url) as client:
        with tracer.start_as_current_span("kept request"):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a"}])
        with tracer.start_as_current_span("dropped request"):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "b"}])
    assert root.roots == ["kept request", "dropped request"]
    assert [s.name for s in exporter.get_finished_spans()] == ["chat " + MODEL]
    assert len(server.requests) == 2

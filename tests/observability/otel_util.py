"""An instrumented process for a test: in-memory span exporter and metric reader."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from holysheep.integrations.otel import HolySheepInstrumentor


@dataclass
class Telemetry:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        """Every data point of metric ``name`` (histogram points have .count/.sum, counters .value)."""
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        out.extend(metric.data.data_points)
        return out


def providers() -> Telemetry:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return Telemetry(exporter, reader, tracer_provider, MeterProvider(metric_readers=[reader]))


@contextmanager
def instrumented(**kwargs: Any) -> Iterator[Telemetry]:
    t = providers()
    inst = HolySheepInstrumentor()
    inst.instrument(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider, **kwargs)
    try:
        yield t
    finally:
        inst.uninstrument()

"""HolySheepInstrumentor against the OpenTelemetry SDK's in-memory exporter and metric reader: GenAI spans and
metrics on create, stream, errors, AsyncClient, batch, fallback and uninstrument."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from holysheep import AsyncClient, BadRequestError, Client, Fallback
from holysheep.integrations.otel import COST_METRIC, HolySheepInstrumentor, OpenTelemetryHooks
from holysheep.pricing._cost import completion_cost
from holysheep.testing import FakeServer, Fault

from .conftest import MESSAGES, MODEL
from .otel_util import instrumented, providers


def _client(server: FakeServer, **kw: Any) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0, **kw)


def test_create_is_one_client_span_with_the_genai_attributes(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        resp = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=7, temperature=0.5,
                                              top_p=0.9, stop=["\n"], seed=3)
    (span,) = t.spans()
    assert span.name == f"chat {MODEL}" and span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    a = dict(span.attributes or {})
    assert resp.usage is not None
    assert a == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "holysheep", "gen_ai.request.model": MODEL,
        "gen_ai.request.max_tokens": 7, "gen_ai.request.temperature": 0.5, "gen_ai.request.top_p": 0.9,
        "gen_ai.request.seed": 3, "gen_ai.request.stop_sequences": ("\n",),
        "server.address": "127.0.0.1", "server.port": server.port,
        "gen_ai.response.id": resp.id, "gen_ai.response.model": resp.model,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": resp.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": resp.usage.completion_tokens,
        "holysheep.request_id": resp.request_id,  # served_by only when a fallback served, attempts only when > 1
    }
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.sum > 0  # exact on an injected clock: test_hook_timing.py
    assert duration.attributes["gen_ai.request.model"] == MODEL and "error.type" not in duration.attributes
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": resp.usage.prompt_tokens, "output": resp.usage.completion_tokens}
    (cost,) = t.points(COST_METRIC)
    assert cost.value == pytest.approx(completion_cost(MODEL, resp.usage.prompt_tokens, resp.usage.completion_tokens))
    assert t.points("gen_ai.client.operation.time_to_first_chunk") == []


def test_retries_are_span_events_on_the_one_span(server: FakeServer) -> None:
    server.set_faults([Fault.status(500), Fault.status(503), None])
    with instrumented() as t, _client(server) as client:
        before = time.time_ns()
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
        after = time.time_ns()
    (span,) = t.spans()
    # The span is built when the call ends, with the call's start time and the retries at their own times.
    assert span.start_time is not None and span.end_time is not None
    assert before <= span.start_time <= span.events[0].timestamp <= span.events[1].timestamp <= span.end_time <= after
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    assert events == [
        ("holysheep.retry", {"holysheep.attempts": 1, "error.type": "InternalServerError",
                             "holysheep.retry.delay_s": 0.0, "http.response.status_code": 500}),
        ("holysheep.retry", {"holysheep.attempts": 2, "error.type": "InternalServerError",
                             "holysheep.retry.delay_s": 0.0, "http.response.status_code": 503}),
    ]
    assert span.attributes["holysheep.attempts"] == 3 and span.status.status_code is StatusCode.UNSET


def test_a_failed_call_sets_error_type_and_status_error(server: FakeServer) -> None:
    server.set_faults([Fault.status(400, message="bad request")])
    with instrumented() as t, _client(server) as client, pytest.raises(BadRequestError):
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    (span,) = t.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "BadRequestError"
    assert span.attributes["http.response.status_code"] == 400
    assert "gen_ai.usage.input_tokens" not in span.attributes
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "BadRequestError"
    assert t.points("gen_ai.client.token.usage") == [] and t.points(COST_METRIC) == []


def test_a_stream_span_ends_when_the_stream_ends(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "one two three"}],
                                                stream=True, stream_options={"include_usage": True})
        with stream:
            next(iter(stream))
            assert t.spans() == []  # still open while the stream is read
            for _ in stream:
                pass
        final = stream.get_final_completion()
    (span,) = t.spans()
    a = span.attributes
    assert span.name == f"chat {MODEL}"
    assert (a["gen_ai.response.id"], a["gen_ai.response.model"]) == (final.id, final.model)
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.output_tokens"] == final.usage.completion_tokens
    assert "holysheep.stream.closed_early" not in a
    assert a["holysheep.request_id"] == server.requests[-1].request_id  # from the headers, as for a create
    (ttfc,) = t.points("gen_ai.client.operation.time_to_first_chunk")
    (tpoc,) = t.points("gen_ai.client.operation.time_per_output_chunk")
    assert ttfc.count == 1 and tpoc.count == 2  # one per output chunk after the first ("two", "three")
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.sum >= ttfc.sum


def test_a_stream_closed_early_ends_its_span(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a b c d"}],
                                                stream=True)
        next(iter(stream))
        stream.close()
    (span,) = t.spans()
    assert span.attributes["holysheep.stream.closed_early"] is True
    assert span.status.status_code is StatusCode.UNSET


def test_a_stream_cut_mid_way_ends_its_span_with_the_error(server: FakeServer) -> None:
    server.set_faults([Fault.stream_cut(after_events=2)])
    with instrumented() as t, _client(server) as client:
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
        with pytest.raises(Exception, match="interrupted"), stream:
            list(stream)
    (span,) = t.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "StreamInterruptedError"


def test_async_client_create_and_stream(server: FakeServer) -> None:
    async def main() -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)
            async with await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True) as stream:
                async for _ in stream:
                    pass

    with instrumented() as t:
        asyncio.run(main())
    spans = t.spans()
    assert [s.name for s in spans] == [f"chat {MODEL}"] * 2
    assert all(s.kind is SpanKind.CLIENT and s.attributes["server.port"] == server.port for s in spans)
    assert len(t.points("gen_ai.client.operation.time_to_first_chunk")) == 1


def test_the_caller_span_is_the_parent(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        tracer = t.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span("handler") as parent:
            client.chat.completions.create(model=MODEL, messages=MESSAGES)
    call = next(s for s in t.spans() if s.name.startswith("chat"))
    assert call.parent is not None and call.parent.span_id == parent.get_span_context().span_id


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_batch_is_one_parent_span_with_a_child_per_item(server: FakeServer, kind: str) -> None:
    with instrumented() as t:
        tracer = t.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span("caller") as caller:
            if kind == "sync":
                with _client(server) as client:
                    client.chat.completions.batch(["a", "b", "c"], model=MODEL, concurrency=2, check_quota=False)
            else:
                async def main() -> None:
                    async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                        await client.chat.completions.batch(["a", "b", "c"], model=MODEL, concurrency=2,
                                                            check_quota=False)
                asyncio.run(main())
    spans = t.spans()
    (batch,) = [s for s in spans if s.name == "holysheep.batch"]
    items = [s for s in spans if s.name == f"chat {MODEL}"]
    assert len(items) == 3
    assert all(s.parent is not None and s.parent.span_id == batch.context.span_id for s in items)
    assert len({s.context.trace_id for s in spans}) == 1
    assert batch.parent is not None and batch.parent.span_id == caller.get_span_context().span_id
    a = batch.attributes
    assert (a["holysheep.batch.total"], a["holysheep.batch.succeeded"], a["holysheep.batch.failed"]) == (3, 3, 0)
    assert a["gen_ai.usage.input_tokens"] == sum(s.attributes["gen_ai.usage.input_tokens"] for s in items)
    assert batch.end_time >= max(s.end_time for s in items)


def test_fallback_names_the_endpoint_that_served(recorder: Any) -> None:
    with FakeServer(faults=[Fault.status(503)] * 2) as primary, FakeServer() as backup, instrumented() as t:
        fb = Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")
        with Client(api_key=primary.api_key, base_url=primary.url, max_retries=1, initial_retry_delay=0,
                    fallbacks=[fb]) as client:
            client.chat.completions.create(model=MODEL, messages=MESSAGES)
    (span,) = t.spans()
    assert span.attributes["holysheep.served_by"] == "backup"
    assert span.attributes["server.port"] == backup.port
    assert [e.name for e in span.events] == ["holysheep.retry", "holysheep.fallback"]
    assert span.events[1].attributes["holysheep.served_by"] == "primary"
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.attributes["server.port"] == backup.port


def test_uninstrument_stops_tracing_and_instrument_twice_warns(server: FakeServer,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    t = providers()
    inst = HolySheepInstrumentor()
    assert inst is HolySheepInstrumentor()  # one per process
    with _client(server) as client:  # built before instrument(): traced all the same
        inst.instrument(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)
        try:
            with caplog.at_level(logging.WARNING):
                inst.instrument(tracer_provider=t.tracer_provider)
            assert "already instrumented" in caplog.text
            assert inst.is_instrumented_by_opentelemetry
            client.chat.completions.create(model=MODEL, messages=MESSAGES)
        finally:
            inst.uninstrument()
        assert not inst.is_instrumented_by_opentelemetry
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert len(t.spans()) == 1
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1


def test_hooks_on_one_client_trace_that_client_only(server: FakeServer) -> None:
    t = providers()
    hooks = OpenTelemetryHooks(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)
    with _client(server, hooks=[hooks]) as traced, _client(server) as plain:
        traced.chat.completions.create(model=MODEL, messages=MESSAGES)
        plain.chat.completions.create(model=MODEL, messages=MESSAGES)
        traced.with_options(max_retries=0).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert len(t.spans()) == 2


def test_the_global_tracer_provider_is_the_default(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    t = providers()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: t.tracer_provider)
    HolySheepInstrumentor().instrument(meter_provider=t.meter_provider)
    try:
        with _client(server) as client:
            client.chat.completions.create(model=MODEL, messages=MESSAGES)
    finally:
        HolySheepInstrumentor().uninstrument()
    assert [s.name for s in t.spans()] == [f"chat {MODEL}"]


def test_the_entry_point_names_the_instrumentor() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="opentelemetry_instrumentor") if e.name == "holysheep"]
    assert ep.load() is HolySheepInstrumentor


def test_tool_calls_are_execute_tool_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep._core.hooks import HookSet, tool_started

    t = providers()
    hooks = HookSet([OpenTelemetryHooks(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)])
    ok = tool_started(hooks, "get_weather", "call_1", '{"city": "Paris"}')
    assert ok is not None
    ok.finish("sunny")
    failed = tool_started(hooks, "get_weather", "call_2", "{}")
    assert failed is not None
    failed.finish(error=KeyError("city"))
    assert tool_started(HookSet([object.__new__(type("NoTools", (), {"on_request": lambda s, e: None}))]),
                        "x", None, None) is None  # nobody listens to tools: nothing is built
    good, bad = t.spans()
    assert (good.name, good.kind) == ("execute_tool get_weather", SpanKind.INTERNAL)
    assert dict(good.attributes or {}) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                           "gen_ai.tool.call.id": "call_1"}
    assert bad.status.status_code is StatusCode.ERROR and bad.attributes["error.type"] == "KeyError"


def test_an_async_stream_closed_early_ends_its_span(server: FakeServer) -> None:
    async def main() -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
            stream = await client.chat.completions.create(model=MODEL, stream=True,
                                                          messages=[{"role": "user", "content": "a b c d"}])
            await stream.__anext__()
            await stream.close()

    with instrumented() as t:
        asyncio.run(main())
    (span,) = t.spans()
    assert span.attributes["holysheep.stream.closed_early"] is True
    assert span.status.status_code is StatusCode.UNSET
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert duration.count == 1


def test_opentelemetry_instrument_finds_the_instrumentor(tmp_path: Any) -> None:
    """`opentelemetry-instrument python app.py` (opentelemetry-distro's console exporter) traces a call with no code."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("opentelemetry.distro")
    tool = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.skip("opentelemetry-instrument is not installed")
    app = tmp_path / "app.py"
    app.write_text("from holysheep import Client\nfrom holysheep.testing import FakeServer\n"
                   "with FakeServer() as s, Client(api_key=s.api_key, base_url=s.url) as c:\n"
                   "    c.chat.completions.create(model='gpt-4.1', messages=[{'role': 'user', 'content': 'hi'}])\n")
    env = {"PATH": str(Path(sys.executable).parent), "OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none",
           "OTEL_LOGS_EXPORTER": "none", "OTEL_SERVICE_NAME": "test"}
    out = subprocess.run([tool, sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"name": "chat gpt-4.1"' in out.stdout and '"gen_ai.provider.name": "holysheep"' in out.stdout


def test_embeddings_are_embeddings_spans(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        reply = client.embeddings.create(model="emb", input=["hello world", "bye"], dimensions=8)
    (span,) = t.spans()
    a = span.attributes
    assert span.name == "embeddings emb" and span.kind is SpanKind.CLIENT
    assert (a["gen_ai.operation.name"], a["gen_ai.request.model"]) == ("embeddings", "emb")
    assert a["gen_ai.embeddings.dimension.count"] == 8
    assert a["gen_ai.usage.input_tokens"] == reply.usage.prompt_tokens and "gen_ai.usage.output_tokens" not in a
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": reply.usage.prompt_tokens}


def test_a_raw_response_call_has_the_response_attributes(server: FakeServer) -> None:
    with instrumented() as t, _client(server) as client:
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
        parsed = raw.parse()
    (span,) = t.spans()
    assert span.attributes["gen_ai.response.id"] == parsed.id
    assert span.attributes["gen_ai.usage.output_tokens"] == parsed.usage.completion_tokens

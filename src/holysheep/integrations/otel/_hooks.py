"""``OpenTelemetryHooks``: holysheep's hook events turned into GenAI spans and metrics."""

from __future__ import annotations

from typing import Any

from opentelemetry import context, metrics, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from holysheep._core.hooks import (
    BatchEvent,
    BodyEndEvent,
    Hooks,
    RequestEvent,
    ResponseEvent,
    StreamEndEvent,
    StreamEvent,
    ToolEvent,
)
from holysheep._core.raw_response import APIResponse
from holysheep._core.wire import CHAT, WireFormat, wire_for_path, wire_of_response
from holysheep._version import __version__
from holysheep.integrations.otel._attributes import (
    API_TYPE,
    ATTEMPTS,
    BODY_READ,
    BODY_UNPARSED,
    ERROR_TYPE,
    FINISH_REASONS,
    HTTP_STATUS,
    INPUT_MESSAGES,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PROVIDER,
    PROVIDER_NAME,
    REQUEST_ID,
    REQUEST_MODEL,
    RESPONSE_ID,
    RESPONSE_MODEL,
    SERVED_BY,
    SERVER_ADDRESS,
    SERVER_PORT,
    SYSTEM_INSTRUCTIONS,
    capture_from_env,
    input_messages,
    output_messages,
    request_attributes,
    response_attributes,
    system_instructions,
    usage_counts,
)
from holysheep.integrations.otel._metrics import COST_METRIC, CallMetrics, MetricKey
from holysheep.integrations.otel._scrubbing import ScrubbingTracer

__all__ = ["COST_METRIC", "OpenTelemetryHooks"]  # COST_METRIC: re-exported from _metrics

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"


class _Call:
    """One call's span (started at its first attempt) and what its end needs: ``end`` holds the attributes
    set when it ends (one ``set_attributes``), the request's went in with ``start_span``."""

    __slots__ = ("end", "first_chunk_s", "host", "op", "port", "request_model", "served_by", "span")

    def __init__(self, span: Any, op: str, request_model: str | None, event: RequestEvent) -> None:
        self.span, self.op, self.request_model = span, op, request_model
        self.host, self.port, self.served_by = event.host, event.port, event.served_by
        self.end: dict[str, Any] = {}
        self.first_chunk_s: float | None = None

    def stream_key(self) -> MetricKey:
        """The metric attributes' key of a stream's chunk timings (no response model or error yet)."""
        return (self.op, self.request_model, None, self.host, self.port, None)


class _Current:
    """``around_send``: the call's span is the current span while its request is sent (HTTP-client spans
    nest under it), and the configured propagators (``OTEL_PROPAGATORS``, W3C ``traceparent`` by default)
    write its context into the request's headers."""

    __slots__ = ("event", "span", "token")

    def __init__(self, span: Any, event: RequestEvent) -> None:
        self.span, self.event = span, event

    def __enter__(self) -> None:
        current = trace.set_span_in_context(self.span.span)  # the real span (ScrubbingSpan wraps it)
        self.token = context.attach(current)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=current)
        for name, value in carrier.items():
            self.event.set_header(name, value)

    def __exit__(self, *exc_info: object) -> None:
        context.detach(self.token)


class OpenTelemetryHooks(Hooks):
    """Hooks that record each call as a GenAI CLIENT span and in the GenAI client metrics.

    Pass one to a client (``Client(hooks=[OpenTelemetryHooks()])``) to trace that client only, or use
    ``HolySheepInstrumentor().instrument()`` to trace every client. ``tracer_provider`` /
    ``meter_provider`` default to the global ones; ``capture_message_content`` defaults to
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

    A call's span starts with its first attempt and ends with the call (its retries are events on it). It is
    the current span while each attempt is sent, so HTTP-client spans nest under it, and the configured
    propagators write its context (``traceparent``) into the request's headers.
    """

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None,
                 capture_message_content: bool | None = None) -> None:
        self._tracer = ScrubbingTracer(trace.get_tracer(__name__, __version__, tracer_provider, schema_url=SCHEMA_URL))
        meter = metrics.get_meter(__name__, __version__, meter_provider, schema_url=SCHEMA_URL)
        self.capture_content = capture_from_env() if capture_message_content is None else bool(capture_message_content)
        self._metrics = CallMetrics(meter)

    # ------------------------------------------------------------------ calls
    def on_request(self, event: RequestEvent) -> None:
        ctx = event.ctx
        state = ctx.state
        call: _Call | None = state.get(self)
        if call is not None:  # a retry or a fallback: the same span
            if event.served_by != call.served_by:
                call.host, call.port, call.served_by = event.host, event.port, event.served_by
                call.end[SERVER_ADDRESS], call.end[SERVER_PORT] = event.host, event.port
            return
        wire = ctx.wire
        op = ctx.operation
        api_type = None
        if isinstance(wire, WireFormat):  # the format names the convention's operation (the Responses API: chat)
            op, api_type = wire.operation or op, wire.api_type
        model = ctx.model
        attrs: dict[str, Any] = {OPERATION: op, PROVIDER_NAME: PROVIDER, SERVER_ADDRESS: event.host,
                                 SERVER_PORT: event.port}
        if api_type is not None:
            attrs[API_TYPE] = api_type
        if model is not None:
            attrs[REQUEST_MODEL] = model
        body = ctx.body
        if body is not None and len(body) > 2:  # more than model and messages: some parameters were set
            request_attributes(attrs, body, ctx.defaulted)
        if self.capture_content:
            items = api_type == "responses"  # the Responses API's input items (bridged: chat messages)
            messages = input_messages(body, items)
            if messages is not None:
                attrs[INPUT_MESSAGES] = messages
            instructions = system_instructions(body) if items else None
            if instructions is not None:
                attrs[SYSTEM_INSTRUCTIONS] = instructions
        batch = ctx.batch
        # The parent: the batch's span, else the caller's context now (the call may end in another one).
        parent = batch.state.get(self) if batch is not None else None
        span = self._tracer.start_span(f"{op} {model}" if model else op, context=parent, kind=SpanKind.CLIENT,
                                       attributes=attrs)
        state[self] = _Call(span, op, model, event)

    def around_send(self, event: RequestEvent) -> _Current | None:
        """The call's span is current while each attempt is sent (`_Current`)."""
        call: _Call | None = event.ctx.state.get(self)
        return _Current(call.span, event) if call is not None else None

    def on_response(self, event: ResponseEvent) -> None:
        call: _Call | None = event.ctx.state.get(self)
        if call is None:
            return
        outcome = event.outcome
        if outcome == "success":
            ctx = event.ctx
            if ctx.stream or ctx.lazy_body:  # the span ends with the stream (on_stream_end) or the body (on_body_end)
                if event.request_id and ctx.stream:  # the stream's end event has no headers
                    call.end[REQUEST_ID] = event.request_id
                return
            response = event.response
            if isinstance(response, APIResponse):  # with_raw_response: the parsed value (parsed once, kept)
                try:
                    response = response.parse()
                except Exception:  # the caller gets the same error from parse(); the span just has less
                    response = None
            self._end_with(call, event, response)
            return
        error = event.error
        if outcome == "retry":
            attrs: dict[str, Any] = {ATTEMPTS: event.attempt, ERROR_TYPE: type(error).__qualname__,
                                     "holysheep.retry.delay_s": event.delay_s or 0.0}
            if event.status_code is not None:
                attrs[HTTP_STATUS] = event.status_code
            call.span.add_event("holysheep.retry", attrs)
        elif outcome == "fallback":
            call.span.add_event("holysheep.fallback",
                                {SERVED_BY: event.served_by, ERROR_TYPE: type(error).__qualname__})
        else:
            if event.status_code is not None:
                call.end[HTTP_STATUS] = event.status_code
            self._end(call, event, error, None, None, 0, None)

    def _end_with(self, call: _Call, event: ResponseEvent | BodyEndEvent, response: Any) -> None:
        """End a successful call's span with what its parsed ``response`` says (usage, id, model, reasons)."""
        end = call.end
        wire = wire_of_response(response) or CHAT
        inp, out, cached, model = response_attributes(end, response, wire)
        if self.capture_content:
            outputs = wire.outputs(response)
            if outputs:
                end[OUTPUT_MESSAGES] = output_messages(outputs)
        self._end(call, event, None, inp, out, cached, model)

    def on_body_end(self, event: BodyEndEvent) -> None:
        """``with_streaming_response`` without ``stream=True``: the span ends once the caller read the body to its
        end (with what the body says), or closed it, or the read failed (then without usage, never guessed)."""
        call: _Call | None = event.ctx.state.pop(self, None)
        if call is None:
            return
        call.end[BODY_READ] = event.read
        if event.read == "full" and event.error is None:
            response = event.response
            if response is None and event.unparsed:
                call.end[BODY_UNPARSED] = event.unparsed
            self._end_with(call, event, response)
        else:
            self._end(call, event, event.error, None, None, 0, None)

    def _end(self, call: _Call, event: ResponseEvent | StreamEndEvent | BodyEndEvent, error: BaseException | None,
             inp: int | None, out: int | None, cached: int, response_model: str | None) -> None:
        """Set the span's end attributes at once, end it, record the metrics."""
        attrs = call.end
        served_by = event.served_by if not isinstance(event, StreamEndEvent) else call.served_by
        if served_by != "primary":  # a fallback served it (each attribute costs the SDK a check: only what tells)
            attrs[SERVED_BY] = served_by
        if event.ctx.attempts > 1:
            attrs[ATTEMPTS] = event.ctx.attempts
        request_id = getattr(event, "request_id", None)
        if request_id:
            attrs[REQUEST_ID] = request_id
        error_type = None
        if error is not None:
            error_type = type(error).__qualname__
            attrs[ERROR_TYPE] = error_type
        span = call.span
        if attrs:
            span.set_attributes(attrs)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end()
        self._metrics.call_ended((call.op, call.request_model, response_model, call.host, call.port, error_type),
                                 event.elapsed_s, inp, out, cached)

    # ------------------------------------------------------------------ streams
    def on_stream_first_chunk(self, event: StreamEvent) -> None:
        call: _Call | None = event.ctx.state.get(self)
        if call is None:
            return
        call.first_chunk_s = event.elapsed_s
        self._metrics.first_chunk(call.stream_key(), event.elapsed_s)

    def on_stream_end(self, event: StreamEndEvent) -> None:
        call: _Call | None = event.ctx.state.pop(self, None)
        if call is None:
            return
        attrs = call.end
        if event.response_id:
            attrs[RESPONSE_ID] = event.response_id
        model = event.response_model or None
        if model:
            attrs[RESPONSE_MODEL] = model
        reasons = event.finish_reasons
        if reasons:
            attrs[FINISH_REASONS] = tuple(reasons)
        inp, out, cached = usage_counts(event.usage, wire_for_path(event.ctx.path) or CHAT)
        if inp is not None:
            attrs[INPUT_TOKENS] = inp
        if out is not None:
            attrs[OUTPUT_TOKENS] = out
        if event.closed:
            attrs["holysheep.stream.closed_early"] = True
        if self.capture_content:
            attrs[OUTPUT_MESSAGES] = output_messages([(event.text, reasons[0] if reasons else None, event.tool_calls)])
        gaps = event.chunk_gaps
        if gaps:
            self._metrics.per_chunk(call.stream_key(), gaps)
        self._end(call, event, event.error, inp, out, cached, model)

    # ------------------------------------------------------------------ batch and tools
    def on_batch_start(self, event: BatchEvent) -> None:
        batch = event.batch
        attrs: dict[str, object] = {"holysheep.batch.concurrency": batch.concurrency}
        if batch.total is not None:
            attrs["holysheep.batch.total"] = batch.total
        if batch.model:
            attrs[REQUEST_MODEL] = batch.model
        span = self._tracer.start_span("holysheep.batch", kind=SpanKind.INTERNAL, attributes=attrs)
        batch.state[self] = trace.set_span_in_context(span.span)  # the parent of every item's span
        batch.state[(self, "span")] = span

    def on_batch_end(self, event: BatchEvent) -> None:
        batch = event.batch
        span = batch.state.pop((self, "span"), None)
        if span is None:
            return
        stats = batch.stats
        if stats is not None:
            span.set_attributes({
                "holysheep.batch.succeeded": stats.succeeded, "holysheep.batch.failed": stats.failed,
                "holysheep.batch.requests": stats.requests, "holysheep.batch.retries": stats.retries,
                INPUT_TOKENS: stats.input_tokens, OUTPUT_TOKENS: stats.output_tokens,
                "holysheep.batch.cost_usd": float(stats.cost_usd or 0.0)})
            if stats.stop_reason:
                span.set_attribute("holysheep.batch.stop_reason", str(stats.stop_reason))
            if stats.failed:
                span.set_status(Status(StatusCode.ERROR, f"{stats.failed} items failed"))
        span.end()

    def on_tool_start(self, event: ToolEvent) -> None:
        attrs: dict[str, object] = {OPERATION: "execute_tool", "gen_ai.tool.name": event.name}
        if event.call_id:
            attrs["gen_ai.tool.call.id"] = event.call_id
        if self.capture_content and event.arguments is not None:
            from holysheep._core.keys import redact

            attrs["gen_ai.tool.call.arguments"] = redact(event.arguments)
        parent = event.batch.state.get(self) if event.batch is not None else None
        event.state[self] = self._tracer.start_span(f"execute_tool {event.name}", context=parent,
                                                    kind=SpanKind.INTERNAL, attributes=attrs)

    def on_tool_end(self, event: ToolEvent) -> None:
        span = event.state.pop(self, None)
        if span is None:
            return
        if event.error is not None:
            error_type = type(event.error).__qualname__
            span.set_attribute(ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        elif self.capture_content and event.result is not None:
            from holysheep._core.keys import redact

            span.set_attribute("gen_ai.tool.call.result", redact(str(event.result))[:4096])
        span.end()

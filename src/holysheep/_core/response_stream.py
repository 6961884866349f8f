"""What a Responses API stream knows (``stream=True`` on ``/responses``): its ``response.*`` events decoded and
typed, the text so far, the final `Response`, typed errors and the latency metrics of `StreamState`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from holysheep._core.json_check import load_json
from holysheep._core.keys import redact
from holysheep._core.response_limits import DEFAULT_MAX_STREAM_TEXT_BYTES
from holysheep._core.sse import DEFAULT_MAX_SSE_BYTES, ServerSentEvent
from holysheep._core.stream_bounds import MAX_GAPS, Pieces, sample_gap
from holysheep._core.stream_state import StreamMetrics, StreamState
from holysheep._egress import scrub_body
from holysheep._exceptions import APIResponseValidationError, APIStreamError, StreamTooLargeError
from holysheep.types.chat import ChatCompletionChunk
from holysheep.types.responses import (
    Response,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
    event_type,
)

__all__ = ["ResponseStreamState"]

_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_TEXT = "response.output_text.delta"
_REFUSAL = "response.refusal.delta"
_ARGS = "response.function_call_arguments.delta"
_REASONING = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})


class ResponseStreamState(StreamState):
    """`StreamState` for ``response.*`` events: ``feed`` returns typed events (``ResponseTextDeltaEvent``, ...);
    ``final_completion`` is the `Response` of ``response.completed`` (or one built from the deltas)."""

    __slots__ = ("_response",)

    def __init__(self, started_at: float, *, secret: str | None = None, max_event_bytes: int = DEFAULT_MAX_SSE_BYTES,
                 clock: Callable[[], float] = time.perf_counter,
                 max_text_bytes: int = DEFAULT_MAX_STREAM_TEXT_BYTES) -> None:
        super().__init__(started_at, secret=secret, max_event_bytes=max_event_bytes, clock=clock,
                         max_text_bytes=max_text_bytes)
        self._response: Response | None = None

    def _events(self, events: list[ServerSentEvent]) -> list[Any]:
        out: list[Any] = []
        for event in events:
            if self.done or self.overflow is not None:
                break
            data = event.data
            if data.startswith("[DONE]"):
                self.done = True
                self.mark_end()
                break
            if event.event == "error":
                self._raise_if_error(event)
            try:
                payload = load_json(scrub_body(data))  # a key the server echoed is masked
                kind = payload.get("type") if isinstance(payload, dict) else None
                typed = event_type(kind).model_validate(payload) if isinstance(kind, str) else None
            except ValueError:  # pydantic's ValidationError is a ValueError
                typed = None
            if typed is None:
                self.mark_end()
                shown = redact(data[:200], self._secret)
                raise APIResponseValidationError(
                    f"A stream event is not a valid Responses API event: {shown!r}. The text so far is in "
                    ".partial_text; check that the server serves /responses.", status_code=200,
                    partial_text=self.partial_text, body=redact(data[:2000], self._secret))
            if kind == "error":
                self._raise_if_error(ServerSentEvent(data, "error", event.id, event.retry))
            try:
                self._absorb_event(kind or "", typed)
            except StreamTooLargeError:
                if not out:
                    raise
                break
            out.append(typed)
        return out

    def _absorb_event(self, kind: str, event: object) -> None:
        self.chunks += 1
        if self._first is None:
            self.first_at = self._clock()
            response = getattr(event, "response", None)  # what the end event reads of the first: id and model
            self._first = ChatCompletionChunk(id=getattr(response, "id", ""), model=getattr(response, "model", ""))
        got_content = got_reasoning = False
        delta = getattr(event, "delta", "")
        if kind == _TEXT:
            text = delta
            if text:
                pieces = self._texts.get(0)
                if pieces is None:
                    pieces = self._texts[0] = Pieces()
                pieces.append(self._keep(text, pieces))
                if len(pieces) >= pieces.due:
                    pieces.compact()
                got_content = True
        elif kind == _REFUSAL:
            self._add(self._refusals, 0, delta)
            got_content = True
        elif kind == _ARGS:
            self._keep(delta)
            got_content = True
        elif kind in _REASONING:
            if isinstance(delta, str) and delta:
                self._add(self._reasoning, 0, delta)
                got_reasoning = True
        elif kind in _FINAL:
            response = getattr(event, "response", None)
            assert isinstance(response, Response)
            self._response = response
            self._usage = response.usage
            details = response.incomplete_details
            reason = details.reason if details is not None and kind == "response.incomplete" else None
            self.finish[0] = reason or response.status
            if kind == "response.failed":
                self.mark_end()
                error = response.error
                message = error.message if error is not None else "no message"
                raise APIStreamError(redact(f"The response failed mid-stream: {message} (code="
                                            f"{error.code if error is not None else None}). The partial output "
                                            "is in .partial_text.", self._secret),
                                     code=error.code if error is not None else None, partial_text=self.partial_text)
        if got_content or got_reasoning:
            now = self._clock()
            if self._first_out is None:
                self._first_out = now
            elif self._stride == 1 and len(self._gaps) < MAX_GAPS:
                self._gaps.append(now - self._last_out)
            else:
                self._gaps, self._stride = sample_gap(self._gaps, self._stride, self._outputs - 1,
                                                      now - self._last_out)
            self._last_out = now
            self._outputs += 1
            if got_reasoning and self._first_reasoning is None:
                self._first_reasoning = now
            if got_content and self._first_answer is None:
                self._first_answer = now

    def final_completion(self) -> Response:  # type: ignore[override]
        """The `Response` the stream ended with (``response.completed``), or one holding the text received when
        it ended without one."""
        response = self._response
        if response is None:
            first = self._first
            text = self.partial_text
            response = Response.model_validate({
                "id": first.id if first else "", "model": first.model if first else "", "status": "incomplete",
                "output": [ResponseOutputMessage(content=[ResponseOutputText(text=text)])] if text else []})
        if self.ended_at is not None:
            response._update_transport(elapsed_s=self.ended_at - self.started_at)
        return response

    def metrics(self) -> StreamMetrics:
        metrics = super().metrics()
        usage = self._usage
        if isinstance(usage, ResponseUsage) and usage.output_tokens:
            total = metrics.total_s
            metrics = dataclasses.replace(metrics, completion_tokens=usage.output_tokens,
                                          tokens_per_s=usage.output_tokens / total if total else None)
        return metrics

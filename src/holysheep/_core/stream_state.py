"""What a chat stream knows, independent of I/O: decoding, typed errors, folding and latency metrics."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from holysheep._core.keys import redact, redact_value
from holysheep._core.percentile import percentile
from holysheep._core.sse import DEFAULT_MAX_SSE_BYTES, ServerSentEvent, SSEDecoder
from holysheep._egress import scrub_body
from holysheep._exceptions import APIResponseValidationError, APIStreamError
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["StreamMetrics", "StreamState"]


@dataclass(frozen=True)
class StreamMetrics:
    """Latency of one stream, measured on the client.

    ``ttft_s``: request sent → first chunk carrying output (reasoning, content or a tool call).
    ``time_to_first_reasoning_s`` / ``time_to_first_content_s``: to the first reasoning token and to the first
    answer token (content or a tool call); each ``None`` when the stream had none. ``itl_*``: gaps between
    successive output chunks (mean over this stream's gaps, as vLLM's benchmark_serving does per request).
    ``total_s``: request sent → end of stream. ``tokens_per_s``: completion tokens / ``total_s``.
    ``completion_tokens`` comes from ``usage`` when the server sends it, else the output-chunk count.
    """

    ttft_s: float | None
    itl_mean_s: float | None
    itl_p50_s: float | None
    itl_p95_s: float | None
    chunks: int
    completion_tokens: int
    total_s: float | None
    tokens_per_s: float | None
    time_to_first_reasoning_s: float | None = None
    time_to_first_content_s: float | None = None


def _key_without_index(calls: dict[int, dict[str, Any]], call_id: str | None) -> int:
    """Where a tool-call fragment without ``index`` belongs (some servers send them so): the call with its
    ``id``, a new call for a new ``id``, else the latest call (a continuation carries no id)."""
    if not calls:
        return 0
    last = max(calls)
    if call_id is None:
        return last
    for key, slot in calls.items():
        if slot["id"] == call_id:
            return key
    return last if calls[last]["id"] is None else last + 1


class StreamState:
    """Decodes SSE bytes into chunks and keeps everything needed for metrics and the final completion.

    ``started_at`` and every time it stamps are read from ``clock`` (monotonic seconds: the client config's
    ``clock``, ``time.perf_counter`` by default; a test passes a fake one to get exact metrics)."""

    __slots__ = ("_clock", "_content_times", "_decoder", "_first", "_first_answer", "_first_reasoning", "_reasoning",
                 "_refusals", "_roles", "_secret", "_served", "_texts", "_tools", "_usage", "_validate", "chunks",
                 "done", "ended_at", "finish", "first_at", "raw_error", "reported", "started_at")

    def __init__(self, started_at: float, *, secret: str | None = None,
                 max_event_bytes: int = DEFAULT_MAX_SSE_BYTES, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock  # bound once: one slot read per output chunk, as the module-global lookup was
        self._decoder = SSEDecoder(max_line_bytes=max_event_bytes, max_event_bytes=max_event_bytes)
        self._secret = secret  # redacted out of every server text an error carries
        self.started_at = started_at
        self.ended_at: float | None = None
        self.first_at: float | None = None  # when the first chunk was decoded (a read may hold the whole stream)
        self.reported = False  # the hooks were told of the stream's end (once)
        self.raw_error: Exception | None = None  # what observe() kept instead of raising
        self.done = False
        self.chunks = 0
        self._content_times: list[float] = []
        self._first: ChatCompletionChunk | None = None
        self._texts: dict[int, list[str]] = {}
        self._roles: dict[int, str] = {}
        self._tools: dict[int, dict[int, dict[str, Any]]] = {}
        self._reasoning: dict[int, list[str]] = {}
        self._refusals: dict[int, list[str]] = {}
        self._first_reasoning: float | None = None
        self._first_answer: float | None = None
        self.finish: dict[int, str | None] = {}
        self._usage: Any = None
        self._served: dict[str, str] = {}  # the latest system_fingerprint and service_tier a chunk carried
        # pydantic-core's validator itself: model_validate_json adds ~1 us of Python per event
        self._validate = ChatCompletionChunk.__pydantic_validator__.validate_json

    @property
    def events(self) -> int:
        """SSE events dispatched so far (what ``stream_idle_timeout`` counts)."""
        return self._decoder.events

    @property
    def partial_text(self) -> str:
        """Content received so far (choice 0)."""
        return "".join(self._texts.get(0, ()))

    def feed(self, data: bytes) -> list[ChatCompletionChunk]:
        """Chunks completed by ``data``. Raises APIStreamError on an in-stream error event."""
        return self._events(self._decoder.feed(data))

    def finish_stream(self) -> list[ChatCompletionChunk]:
        """The transport reached EOF: dispatch what is pending and stop the clock."""
        chunks = self._events(self._decoder.flush())
        self.mark_end()
        return chunks

    def observe(self, data: bytes) -> None:
        """``data`` read by the caller as raw bytes (``with_streaming_response``'s ``read()``/``iter_*``): fed as
        by `feed` so that the hooks' end event has the usage, text and metrics, its chunks dropped. An error the
        stream would raise (an error event, an event that is not a chunk) is kept in ``raw_error`` instead, and
        later events are only counted. Lines and events past the cap raise `ResponseTooLargeError`, as in `feed`."""
        events = self._decoder.feed(data)
        if self.raw_error is None and events:
            try:
                self._events(events)
            except Exception as exc:  # the caller reads bytes: the stream's error is the hooks' to hear
                self.raw_error = exc

    def observe_end(self) -> None:
        """The raw body ended: dispatch what is pending (as `finish_stream`, errors kept as in `observe`)."""
        events = self._decoder.flush()
        if self.raw_error is None and events:
            try:
                self._events(events)
            except Exception as exc:
                self.raw_error = exc
        self.mark_end()

    def mark_end(self) -> None:
        if self.ended_at is None:
            self.ended_at = self._clock()

    def _events(self, events: list[ServerSentEvent]) -> list[ChatCompletionChunk]:
        out: list[ChatCompletionChunk] = []
        for event in events:
            if self.done:
                break
            data = event.data
            if data.startswith("[DONE]"):
                self.done = True
                self.mark_end()
                break
            if event.event == "error" or '"error"' in data:
                self._raise_if_error(event)
            try:
                chunk = self._validate(scrub_body(data))  # a key the server echoed is masked
            except ValueError:  # pydantic's ValidationError is a ValueError
                chunk = None
            if chunk is None:  # raised outside the handler: pydantic's error (with the raw input) is not chained
                self.mark_end()
                shown = redact(data[:200], self._secret)
                raise APIResponseValidationError(
                    f"A stream event is not a valid chat.completion.chunk: {shown!r}. The text so far "
                    "is in .partial_text; check that base_url points at an OpenAI-compatible server.",
                    status_code=200, partial_text=self.partial_text, body=redact(data[:2000], self._secret),
                )
            self._absorb(chunk)
            out.append(chunk)
        return out

    def _raise_if_error(self, event: ServerSentEvent) -> None:
        try:
            payload = json.loads(event.data)
        except ValueError:
            payload = {"message": event.data}
        err = payload.get("error") if isinstance(payload, dict) else None
        if err is None and event.event == "error":
            err = payload
        if err is None:
            return
        if not isinstance(err, dict):
            err = {"message": str(err)}
        self.mark_end()
        err = redact_value(err, self._secret)  # the server may echo the key: mask it, keep the structure
        code = err.get("code")
        message = redact(f"The server reported an error mid-stream: {err.get('message') or 'no message'} "
                         f"(type={err.get('type')}, code={code}). The partial output is in .partial_text.",
                         self._secret)
        err_type = err.get("type")
        raise APIStreamError(
            message, body=err, type=err_type if isinstance(err_type, str) else None,
            code=str(code) if code is not None else None, partial_text=self.partial_text,
            param=err["param"] if isinstance(err.get("param"), str) else None,
        )

    def _absorb(self, chunk: ChatCompletionChunk) -> None:
        self.chunks += 1
        if self._first is None:
            self._first = chunk
            self.first_at = self._clock()
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.system_fingerprint is not None:
            self._served["system_fingerprint"] = chunk.system_fingerprint
        if chunk.service_tier is not None:
            self._served["service_tier"] = chunk.service_tier
        got_content = got_reasoning = False
        for choice in chunk.choices:
            delta = choice.delta
            idx = choice.index
            if delta.role:
                self._roles[idx] = delta.role
            if delta.content is not None:  # "" too: the final content is then "", not None (as openai)
                self._texts.setdefault(idx, []).append(delta.content)
                got_content = got_content or bool(delta.content)
            if delta.reasoning_content:
                self._reasoning.setdefault(idx, []).append(delta.reasoning_content)
                got_reasoning = True
            if delta.refusal:
                self._refusals.setdefault(idx, []).append(delta.refusal)
                got_content = True
            if delta.tool_calls:
                got_content = True
                calls = self._tools.setdefault(idx, {})
                for tc in delta.tool_calls:
                    key = tc.index if "index" in tc.model_fields_set else _key_without_index(calls, tc.id)
                    slot = calls.setdefault(key, {"id": None, "type": "function",
                                                  "function": {"name": None, "arguments": ""}})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.type:
                        slot["type"] = tc.type
                    if tc.function is not None:
                        if tc.function.name:
                            slot["function"]["name"] = tc.function.name
                        if tc.function.arguments:
                            slot["function"]["arguments"] += tc.function.arguments
            if choice.finish_reason is not None:
                self.finish[idx] = choice.finish_reason
        if got_content or got_reasoning:
            now = self._clock()
            self._content_times.append(now)
            if got_reasoning and self._first_reasoning is None:
                self._first_reasoning = now
            if got_content and self._first_answer is None:
                self._first_answer = now

    def final_completion(self) -> ChatCompletion:
        """The chunks folded into one ChatCompletion (content, tool calls, usage, finish_reason)."""
        first = self._first
        indices = sorted(set(self._texts) | set(self._roles) | set(self._tools) | set(self.finish)
                         | set(self._reasoning) | set(self._refusals))
        choices = []
        for idx in indices:
            message: dict[str, Any] = {"role": self._roles.get(idx, "assistant"),
                                       "content": "".join(self._texts[idx]) if idx in self._texts else None}
            if idx in self._reasoning:
                message["reasoning_content"] = "".join(self._reasoning[idx])
            if idx in self._refusals:
                message["refusal"] = "".join(self._refusals[idx])
            if idx in self._tools:
                message["tool_calls"] = [self._tools[idx][k] for k in sorted(self._tools[idx])]
            choices.append({"index": idx, "message": message, "finish_reason": self.finish.get(idx)})
        body: dict[str, Any] = {
            "id": first.id if first else "",
            "object": "chat.completion",
            "created": first.created if first else 0,
            "model": first.model if first else "",
            "choices": choices,
            "usage": self._usage.model_dump() if self._usage is not None else None,
            **self._served,
        }
        completion = ChatCompletion.model_validate(body)
        if self.ended_at is not None:
            completion._update_transport(elapsed_s=self.ended_at - self.started_at)
        return completion

    def metrics(self) -> StreamMetrics:
        """Latency figures so far (complete once the stream has ended)."""
        times = self._content_times
        ttft = times[0] - self.started_at if times else None
        gaps = [b - a for a, b in itertools.pairwise(times)]
        end = self.ended_at
        total = (end - self.started_at) if end is not None else None
        usage_tokens = getattr(self._usage, "completion_tokens", None) if self._usage is not None else None
        tokens = usage_tokens if usage_tokens else len(times)
        return StreamMetrics(
            ttft_s=ttft,
            itl_mean_s=statistics.fmean(gaps) if gaps else None,
            itl_p50_s=statistics.median(gaps) if gaps else None,
            itl_p95_s=percentile(gaps, 95),
            chunks=self.chunks,
            completion_tokens=tokens,
            total_s=total,
            tokens_per_s=(tokens / total) if total else None,
            time_to_first_reasoning_s=(self._first_reasoning - self.started_at
                                       if self._first_reasoning is not None else None),
            time_to_first_content_s=self._first_answer - self.started_at if self._first_answer is not None else None,
        )

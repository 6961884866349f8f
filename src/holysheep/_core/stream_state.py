"""What a chat stream knows, independent of I/O: decoding, typed errors, folding and latency metrics."""

from __future__ import annotations

import functools
import time
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from holysheep._core.keys import redact
from holysheep._core.response_limits import DEFAULT_MAX_STREAM_TEXT_BYTES
from holysheep._core.scrub import scrub_assembled
from holysheep._core.sse import DEFAULT_MAX_SSE_BYTES, ServerSentEvent, SSEDecoder
from holysheep._core.stream_bounds import MAX_GAPS, Pieces, StreamCaps, sample_gap
from holysheep._core.stream_errors import stream_error
from holysheep._core.stream_metrics import StreamMetrics, stream_metrics
from holysheep._egress import scrub_body
from holysheep._exceptions import APIResponseValidationError, StreamTooLargeError
from holysheep.types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["StreamMetrics", "StreamState"]

def _joined(pieces: Iterable[str]) -> str:
    """Pieces of a stream's text joined, and scrubbed as a whole (`scrub_assembled`)."""
    return scrub_assembled("".join(pieces))


def _key_without_index(calls: dict[int, dict[str, object]], call_id: str | None) -> int:
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


class StreamState(StreamCaps):
    """Decodes SSE bytes into chunks and keeps everything needed for metrics and the final completion.

    ``started_at`` and every time it stamps are read from ``clock`` (monotonic seconds: the client config's
    ``clock``, ``time.perf_counter`` by default; a test passes a fake one to get exact metrics)."""

    __slots__ = ("_args", "_clock", "_decoder", "_first", "_first_answer", "_first_out", "_first_reasoning", "_gaps",
                 "_last_out", "_outputs", "_raw", "_reasoning", "_refusals", "_roles", "_secret", "_served", "_stride",
                 "_texts", "_tools", "_usage", "_validate", "done", "ended_at", "finish", "first_at", "on_end",
                 "progress", "raw_error", "reported", "started_at")

    def __init__(self, started_at: float, *, secret: str | None = None,
                 max_event_bytes: int = DEFAULT_MAX_SSE_BYTES, clock: Callable[[], float] = time.perf_counter,
                 max_text_bytes: int = DEFAULT_MAX_STREAM_TEXT_BYTES) -> None:
        self._clock = clock  # bound once: one slot read per output chunk, as the module-global lookup was
        self._decoder = SSEDecoder(max_line_bytes=max_event_bytes, max_event_bytes=max_event_bytes)
        self._secret = secret  # redacted out of every server text an error carries
        super().__init__(max_text_bytes)  # the caps on its text and on what the wire delivers (StreamCaps)
        self.progress = 0  # chunks that carried output, a finish reason or usage (what stream_idle_timeout counts)
        self.started_at = started_at
        self.ended_at: float | None = None
        self.first_at: float | None = None  # when the first chunk was decoded (a read may hold the whole stream)
        self.reported = False  # the hooks were told of the stream's end (once)
        self.raw_error: Exception | None = None  # what observe() kept instead of raising
        self.done = False
        # output chunks: counted, first and last time, and the gaps between them (bounded: see `sample_gap`)
        self._outputs = 0
        self._first_out: float | None = None
        self._last_out = 0.0
        self._gaps = array("d")
        self._stride = 1
        self._first: ChatCompletionChunk | None = None
        # The chunks of the latest batch whose scrubbed copy was handed out, by the copy's id: the state keeps
        # what the server sent and scrubs what it joins as it leaves (`scrub_assembled`), so a key split across
        # two deltas is masked whole, not half masked and half kept.
        self._raw: dict[int, ChatCompletionChunk] = {}
        self._texts: dict[int, Pieces] = {}  # kept text: pieces joined in runs (see `Pieces`)
        self._roles: dict[int, str] = {}
        self._tools: dict[int, dict[int, dict[str, Any]]] = {}
        self._args: dict[tuple[int, int], Pieces] = {}  # (choice, call) -> argument pieces, joined at the end
        self._reasoning: dict[int, Pieces] = {}
        self._refusals: dict[int, Pieces] = {}
        self._first_reasoning: float | None = None
        self._first_answer: float | None = None
        self.finish: dict[int, str | None] = {}
        self._usage: Any = None
        self.on_end: Callable[[object], None] | None = None
        """Called once with the stream's ``usage`` (None when none came) when it ends, however it ends (the
        client's spend cap settles a streamed request so)."""
        self._served: dict[str, str] = {}  # the latest system_fingerprint and service_tier a chunk carried
        # pydantic-core's validator itself: model_validate_json adds ~1 us of Python per event
        self._validate = ChatCompletionChunk.__pydantic_validator__.validate_json

    @property
    def events(self) -> int:
        """SSE events dispatched so far (keep-alive events included: ``stream_idle_timeout`` counts `progress`)."""
        return self._decoder.events

    @property
    def partial_text(self) -> str:
        """Content received so far (choice 0), scrubbed as a whole."""
        return _joined(self._texts.get(0, ()))

    def raw(self, chunk: ChatCompletionChunk) -> ChatCompletionChunk:
        """What the server sent for ``chunk``, one of the chunks the latest `feed` handed out (``chunk`` itself
        unless the scrubber masked something in it): for a consumer that joins the pieces and scrubs the joined
        value with `scrub_assembled`, as the stream helper's snapshots do."""
        return self._raw.get(id(chunk), chunk)

    def feed(self, data: bytes) -> list[ChatCompletionChunk]:
        """Chunks completed by ``data``. Raises APIStreamError on an in-stream error event, and
        `StreamTooLargeError` past the text cap (when chunks came before it, on the next call: the read loops
        raise `too_large` once they have handed those out)."""
        if self.overflow is not None:
            raise self.too_large()
        self._count_wire(data)
        events = self._decoder.feed(data)
        self._count_events(self._decoder.events)
        return self._events(events)

    def finish_stream(self) -> list[ChatCompletionChunk]:
        """The transport reached EOF: dispatch what is pending and stop the clock."""
        if self.overflow is not None:
            raise self.too_large()
        chunks = self._events(self._decoder.flush())
        self.mark_end()
        return chunks

    def observe(self, data: bytes) -> None:
        """``data`` read by the caller as raw bytes (``with_streaming_response``'s ``read()``/``iter_*``): fed as
        by `feed` so that the hooks' end event has the usage, text and metrics, its chunks dropped. An error the
        stream would raise (an error event, an event that is not a chunk) is kept in ``raw_error`` instead, and
        later events are only counted. Lines and events past the cap raise `ResponseTooLargeError`, as in `feed`;
        text past its cap sets ``overflow`` (the raw reader raises `too_large`: it is a bound)."""
        try:
            self._count_wire(data)
        except StreamTooLargeError:
            return  # ``overflow`` says so (the raw reader raises `too_large`)
        events = self._decoder.feed(data)
        if self.raw_error is None and events:
            try:
                self._count_events(self._decoder.events)
                self._events(events)
            except StreamTooLargeError:
                pass  # ``overflow`` says so; the error is not kept (it would hold this state in a cycle)
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
            on_end = self.on_end
            if on_end is not None:
                self.on_end = None
                on_end(self._usage)

    @property
    def usage(self) -> object:
        """The ``usage`` the stream carried so far (``stream_options={"include_usage": True}``), or None."""
        return self._usage

    def _events(self, events: list[ServerSentEvent]) -> list[ChatCompletionChunk]:
        out: list[ChatCompletionChunk] = []
        self._raw.clear()
        for event in events:
            if self.done or self.overflow is not None:
                break
            data = event.data
            if data.startswith("[DONE]"):
                self.done = True
                self.mark_end()
                break
            if event.event == "error" or '"error"' in data:
                self._raise_if_error(event)
            clean = scrub_body(data)  # a key the server echoed is masked in the chunk handed out
            try:
                chunk = self._validate(clean)
                raw = chunk if clean is data else self._validate(data)
            except ValueError:  # pydantic's ValidationError is a ValueError
                chunk = raw = None
            if chunk is None:  # raised outside the handler: pydantic's error (with the raw input) is not chained
                self.mark_end()
                shown = redact(data[:200], self._secret)
                raise APIResponseValidationError(
                    f"A stream event is not a valid chat.completion.chunk: {shown!r}. The text so far "
                    "is in .partial_text; check that base_url points at an OpenAI-compatible server.",
                    status_code=200, partial_text=self.partial_text, body=redact(data[:2000], self._secret),
                )
            try:
                self._absorb(raw)
            except StreamTooLargeError:  # the chunks before it are still handed out, then `too_large` again
                if not out:
                    raise
                break
            if raw is not chunk:
                self._raw[id(chunk)] = raw
                if self._first is raw:
                    self._first = chunk
            out.append(chunk)
        return out

    def _raise_if_error(self, event: ServerSentEvent) -> None:
        error = stream_error(event, self._secret, lambda: self.partial_text)
        if error is not None:
            self.mark_end()
            raise error

    def too_large(self) -> StreamTooLargeError:
        """A new `StreamTooLargeError` for a stream past its text cap. Its ``partial_text`` is joined from choice
        0's pieces when read, and it holds no reference to this state (nor this state to it): dropping the stream
        frees its text at once, without waiting for the cycle collector."""
        limit, pieces = self._max_text, self._texts.get(0)
        what = (f"The stream's text passed {limit} bytes (the max_stream_text_bytes limit)" if self._why is None else
                f"The stream passed {self._why}, the most a stream may deliver for max_stream_text_bytes={limit} "
                "(see Streaming: bounded memory)")
        return StreamTooLargeError(
            f"{what} after {self.overflow} chunks; the connection was closed and the call was not retried. The text "
            "up to the limit is in .partial_text; raise max_stream_text_bytes on the client if this server really "
            "sends that much.", partial_text=functools.partial(_joined, pieces) if pieces else "", limit=limit)

    def _add(self, store: dict[Any, Pieces], key: Any, text: str) -> None:
        pieces = store.get(key)
        if pieces is None:
            pieces = store[key] = Pieces()
        pieces.append(self._keep(text))
        if len(pieces) >= pieces.due:
            pieces.compact()

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
        moved = chunk.usage is not None
        for choice in chunk.choices:
            delta = choice.delta
            idx = choice.index
            if idx not in self._choices:
                self._open_choice(idx)
            if delta.role:
                self._roles[idx] = delta.role if idx in self._roles else self._keep(delta.role)
            text = delta.content
            if text is not None and idx not in self._texts:  # "" too: the final content is then "", not None
                self._texts[idx] = Pieces()
            if text:  # the hot path, inline: count it against the cap, keep it
                size = len(text) if text.isascii() else len(text.encode())
                pieces = self._texts[idx]
                if self._kept + size > self._max_text:
                    self._keep(text, pieces if idx == 0 else None)  # raises StreamTooLargeError
                self._kept += size
                pieces.append(text)
                if len(pieces) >= pieces.due:
                    pieces.compact()
                got_content = True
            if delta.reasoning_content:
                self._add(self._reasoning, idx, delta.reasoning_content)
                got_reasoning = True
            if delta.refusal:
                self._add(self._refusals, idx, delta.refusal)
                got_content = True
            if delta.tool_calls:
                got_content = True
                self._tool_calls(idx, delta.tool_calls)
            if choice.finish_reason is not None:
                if idx not in self.finish:
                    self._keep(choice.finish_reason)
                self.finish[idx] = choice.finish_reason
                moved = True
        if moved or got_content or got_reasoning:
            self.progress += 1  # a keep-alive (no choices, or empty deltas) does not reset the idle clock
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

    def _tool_calls(self, idx: int, deltas: list[Any]) -> None:
        calls = self._tools.setdefault(idx, {})
        for tc in deltas:
            key = tc.index if "index" in tc.model_fields_set else _key_without_index(calls, tc.id)
            slot = calls.get(key)
            if slot is None:
                self._open_call()  # what keeping a call costs, with or without arguments
                slot = calls[key] = {"id": None, "type": "function", "function": {"name": None, "arguments": ""}}
            if tc.id and tc.id != slot["id"]:
                slot["id"] = self._keep(tc.id)
            if tc.type and tc.type != slot["type"]:
                slot["type"] = self._keep(tc.type)
            if tc.function is not None:
                if tc.function.name and tc.function.name != slot["function"]["name"]:
                    slot["function"]["name"] = self._keep(tc.function.name)
                if tc.function.arguments:
                    self._add(self._args, (idx, key), tc.function.arguments)

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
                message["tool_calls"] = [self._tool_call(idx, k) for k in sorted(self._tools[idx])]
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
        completion = ChatCompletion.model_validate(scrub_assembled(body))  # a key split across deltas is whole here
        if self.ended_at is not None:
            completion._update_transport(elapsed_s=self.ended_at - self.started_at)
        return completion

    def _tool_call(self, idx: int, key: int) -> dict[str, object]:
        slot = self._tools[idx][key]
        pieces = self._args.get((idx, key))
        if not pieces:
            return slot
        return {**slot, "function": {**slot["function"], "arguments": "".join(pieces)}}

    def metrics(self) -> StreamMetrics:
        """Latency figures so far (complete once the stream has ended)."""
        usage_tokens = getattr(self._usage, "completion_tokens", None) if self._usage is not None else None
        return stream_metrics(self.started_at, self.ended_at, self._first_out, self._last_out, self._outputs,
                              self._gaps, self.chunks, usage_tokens, self._first_reasoning, self._first_answer)

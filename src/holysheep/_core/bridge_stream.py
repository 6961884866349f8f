"""A chat completions stream seen as a Responses API stream (the bridge's ``stream=True``, sans-I/O).

`BridgedStreamState` decodes the chat chunks as `StreamState` does (text, tool calls, usage, metrics, typed
errors) and hands out the ``response.*`` events a ``/responses`` stream would have sent for them: created, the
message item and its text deltas, function-call argument deltas, then the items' ends and ``response.completed``
with the folded reply as a `Response`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from holysheep._core.sse import ServerSentEvent
from holysheep._core.stream_state import StreamState
from holysheep.types.chat import ChatCompletion
from holysheep.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

__all__ = ["BridgedStreamState"]


class BridgedStreamState(StreamState):
    """`StreamState` over chat chunks whose ``feed`` returns Responses API events; ``final_completion`` is the
    `Response` that ``convert`` makes of the folded completion."""

    __slots__ = ("_call_items", "_closed", "_convert", "_message", "_seq")

    def __init__(self, started_at: float, convert: Callable[[ChatCompletion], Response], *, secret: str | None,
                 max_event_bytes: int, clock: Callable[[], float], max_text_bytes: int) -> None:
        super().__init__(started_at, secret=secret, max_event_bytes=max_event_bytes, clock=clock,
                         max_text_bytes=max_text_bytes)
        self._convert = convert
        self._seq = 0
        self._message = False  # the message item was opened (text arrived)
        self._call_items: dict[int, str] = {}  # tool-call index -> its item id
        self._closed = False

    def _n(self) -> int:
        self._seq += 1
        return self._seq - 1

    def _events(self, events: list[ServerSentEvent]) -> list[Any]:
        out: list[object] = []
        for chunk in super()._events(events):
            if self.chunks == 1 or not self._seq:
                out.append(ResponseCreatedEvent(sequence_number=self._n(), response=Response.model_validate(
                    {"id": chunk.id, "model": chunk.model, "status": "in_progress", "created_at": chunk.created})))
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                delta = choice.delta
                if delta.content:
                    if not self._message:
                        self._message = True
                        item = {"id": f"msg_{chunk.id}", "type": "message", "role": "assistant",
                                "status": "in_progress", "content": []}
                        out.append(ResponseOutputItemAddedEvent.model_validate(
                            {"sequence_number": self._n(), "output_index": 0, "item": item}))
                        out.append(ResponseContentPartAddedEvent.model_validate(
                            {"sequence_number": self._n(), "item_id": f"msg_{chunk.id}", "output_index": 0,
                             "content_index": 0, "part": {"type": "output_text", "text": ""}}))
                    out.append(ResponseTextDeltaEvent(sequence_number=self._n(), item_id=f"msg_{chunk.id}",
                                                      output_index=0, content_index=0, delta=delta.content))
                for call in delta.tool_calls or ():
                    item_id = self._call_items.get(call.index)
                    if item_id is None:
                        item_id = self._call_items[call.index] = f"fc_{call.id or call.index}"
                        fn = call.function
                        out.append(ResponseOutputItemAddedEvent.model_validate(
                            {"sequence_number": self._n(), "output_index": 1 + call.index, "item": {
                                "type": "function_call", "id": item_id, "call_id": call.id or "",
                                "name": fn.name if fn is not None and fn.name else "", "arguments": "",
                                "status": "in_progress"}}))
                    if call.function is not None and call.function.arguments:
                        out.append(ResponseFunctionCallArgumentsDeltaEvent(
                            sequence_number=self._n(), item_id=item_id, output_index=1 + call.index,
                            delta=call.function.arguments))
        if self.done:
            out.extend(self._close())
        return out

    def finish_stream(self) -> list[Any]:
        out: list[object] = list(super().finish_stream())
        return out if self._closed else [*out, *self._close()]

    def _close(self) -> list[object]:
        """The items' ends and ``response.completed`` (``response.incomplete`` when cut by the token limit)."""
        if self._closed or not self.chunks:
            return []
        self._closed = True
        response = self.final_response()
        out: list[object] = []
        for index, item in enumerate(response.output):
            if item.type == "message":
                text = response.output_text
                out.append(ResponseTextDoneEvent(sequence_number=self._n(), item_id=item.id or "", output_index=index,
                                                 content_index=0, text=text))
                out.append(ResponseContentPartDoneEvent.model_validate(
                    {"sequence_number": self._n(), "item_id": item.id or "", "output_index": index,
                     "content_index": 0, "part": {"type": "output_text", "text": text}}))
            out.append(ResponseOutputItemDoneEvent(sequence_number=self._n(), output_index=index, item=item))
        final = ResponseIncompleteEvent if response.status == "incomplete" else ResponseCompletedEvent
        out.append(final(sequence_number=self._n(), response=response))
        return out

    def final_response(self) -> Response:
        """The folded chat completion as a `Response` (``final_completion`` is the chat completion itself)."""
        return self._convert(self.final_completion())

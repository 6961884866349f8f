"""The events of ``chat.completions.stream(...)``, built from chunks without I/O (openai's names and order).

Per chunk: ``chunk``, then per choice the deltas (content, refusal, reasoning, tool-call arguments, logprobs),
then the ``*.done`` events of what just ended (content and refusal end at a tool call or the finish reason; a
tool call's arguments end at the next tool call or the finish reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from holysheep._core.json_check import load_json
from holysheep._core.scrub import scrub_assembled as _clean
from holysheep.types.chat_stream import (
    ChunkEvent,
    ContentDeltaEvent,
    ContentDoneEvent,
    FunctionToolCallArgumentsDeltaEvent,
    FunctionToolCallArgumentsDoneEvent,
    LogprobsContentDeltaEvent,
    LogprobsContentDoneEvent,
    LogprobsRefusalDeltaEvent,
    LogprobsRefusalDoneEvent,
    ReasoningDeltaEvent,
    ReasoningDoneEvent,
    RefusalDeltaEvent,
    RefusalDoneEvent,
)

if TYPE_CHECKING:
    from holysheep._core.schema import ResponseFormat
    from holysheep.types.chat import ChatCompletion, ChatCompletionChunk, ChunkChoice

__all__ = ["ChatEventState", "partial_json", "strict_tool_names"]


def partial_json(text: str) -> object:
    """``text`` (JSON that may be cut off) decoded as far as it goes; None when nothing decodes yet."""
    if not text.strip():
        return None
    from pydantic_core import from_json

    try:
        return from_json(text, allow_partial=True)
    except ValueError:
        return None


def strict_tool_names(tools: object) -> frozenset[str]:
    """The names of the ``tools`` marked ``strict`` (their arguments are decoded, as openai does)."""
    names = set()
    if isinstance(tools, Iterable) and not isinstance(tools, (str, bytes)):
        for tool in tools:
            fn = tool.get("function") if isinstance(tool, Mapping) else None
            if isinstance(fn, Mapping) and fn.get("strict") and isinstance(fn.get("name"), str):
                names.add(fn["name"])
    return frozenset(names)


class _ChoiceState:
    __slots__ = ("content", "content_done", "current_tool", "done_tools", "logprobs_content",
                 "logprobs_content_done", "logprobs_refusal", "logprobs_refusal_done", "reasoning",
                 "reasoning_done", "refusal", "refusal_done", "tools")

    def __init__(self) -> None:
        self.content: str | None = None
        self.refusal: str | None = None
        self.reasoning: str | None = None
        self.tools: dict[int, list[str]] = {}  # index -> [name, arguments]
        self.content_done = self.refusal_done = self.reasoning_done = False
        self.logprobs_content: list[Any] | None = None
        self.logprobs_refusal: list[Any] | None = None
        self.logprobs_content_done = self.logprobs_refusal_done = False
        self.current_tool: int | None = None
        self.done_tools: set[int] = set()


class ChatEventState:
    """Turns each chunk into its events. ``fmt`` (a ``response_format`` model) fills ``parsed``;
    ``parse_arguments(name, arguments)`` gives a finished tool call's ``parsed_arguments`` (default: the
    decoded JSON of a strict tool, else None); ``snapshot()`` is the completion folded so far."""

    def __init__(self, *, fmt: ResponseFormat[object] | None = None, tools: object = None,
                 snapshot: Callable[[], ChatCompletion],
                 parse_arguments: Callable[[str, str], object] | None = None) -> None:
        self._fmt = fmt
        self._strict = strict_tool_names(tools)
        self._snapshot = snapshot
        self._parse_arguments = parse_arguments or self._strict_arguments
        self._choices: dict[int, _ChoiceState] = {}

    def _strict_arguments(self, name: str, arguments: str) -> object:
        if name not in self._strict:
            return None
        try:
            return load_json(arguments)
        except ValueError:
            return None

    def handle_chunk(self, chunk: ChatCompletionChunk, raw: ChatCompletionChunk | None = None) -> list[Any]:
        """The events for one chunk (the first is always its ``chunk`` event). ``raw``: what the server sent for
        ``chunk`` (`StreamState.raw`), when the scrubber masked something in it: the snapshots join what was sent
        and are scrubbed whole, so a key split across two deltas is masked in them (each delta is the chunk's)."""
        events: list[object] = [ChunkEvent(chunk=chunk, snapshot=self._snapshot())]
        sent = raw.choices if raw is not None and len(raw.choices) == len(chunk.choices) else chunk.choices
        for choice, clean in zip(sent, chunk.choices, strict=True):
            state = self._choices.get(choice.index)
            if state is None:
                state = self._choices[choice.index] = _ChoiceState()
            self._deltas(choice, clean, state, events)
            self._done(choice, state, events)
        return events

    def _deltas(self, choice: ChunkChoice, clean: ChunkChoice, state: _ChoiceState, events: list[object]) -> None:
        delta, shown = choice.delta, clean.delta
        reasoning = delta.reasoning_content
        if reasoning is not None:
            state.reasoning = (state.reasoning or "") + reasoning
            events.append(ReasoningDeltaEvent(delta=shown.reasoning_content or "", snapshot=_clean(state.reasoning)))
        if delta.content is not None:
            if state.reasoning is not None and not state.reasoning_done and delta.content:
                state.reasoning_done = True
                events.append(ReasoningDoneEvent(reasoning_content=_clean(state.reasoning)))
            state.content = (state.content or "") + delta.content
            snapshot = _clean(state.content)
            parsed = partial_json(snapshot) if self._fmt is not None and not state.refusal else None
            events.append(ContentDeltaEvent(delta=shown.content or "", snapshot=snapshot, parsed=parsed))
        if delta.refusal is not None:
            state.refusal = (state.refusal or "") + delta.refusal
            events.append(RefusalDeltaEvent(delta=shown.refusal or "", snapshot=_clean(state.refusal)))
        shown_calls = shown.tool_calls or ()
        for i, call in enumerate(delta.tool_calls or ()):
            slot = state.tools.setdefault(call.index, ["", ""])
            piece = ""
            if call.function is not None:
                if call.function.name:
                    slot[0] = call.function.name
                piece = call.function.arguments or ""
                slot[1] += piece
            shown_function = shown_calls[i].function if i < len(shown_calls) else None
            if piece and shown_function is not None:
                piece = shown_function.arguments or ""
            arguments = _clean(slot[1])
            parsed_args = partial_json(arguments) if slot[0] in self._strict else None
            events.append(FunctionToolCallArgumentsDeltaEvent(name=_clean(slot[0]), index=call.index,
                                                              arguments=arguments, parsed_arguments=parsed_args,
                                                              arguments_delta=piece))
        logprobs = choice.logprobs
        if logprobs is not None:
            content = logprobs.content
            if content:
                state.logprobs_content = [*(state.logprobs_content or []), *content]
                events.append(LogprobsContentDeltaEvent(content=content, snapshot=state.logprobs_content))
            refusal = logprobs.refusal
            if refusal:
                state.logprobs_refusal = [*(state.logprobs_refusal or []), *refusal]
                events.append(LogprobsRefusalDeltaEvent(refusal=refusal, snapshot=state.logprobs_refusal))

    def _done(self, choice: ChunkChoice, state: _ChoiceState, events: list[object]) -> None:
        if choice.finish_reason:
            self._text_done(state, events)
            if state.current_tool is not None and state.current_tool not in state.done_tools:
                self._tool_done(state, state.current_tool, events)
        for call in choice.delta.tool_calls or ():
            if state.current_tool != call.index:
                self._text_done(state, events)
                if state.current_tool is not None:
                    self._tool_done(state, state.current_tool, events)
            state.current_tool = call.index

    def _text_done(self, state: _ChoiceState, events: list[object]) -> None:
        if state.reasoning is not None and not state.reasoning_done:
            state.reasoning_done = True
            events.append(ReasoningDoneEvent(reasoning_content=_clean(state.reasoning)))
        if state.content and not state.content_done:
            state.content_done = True
            content = _clean(state.content)
            parsed = self._parsed(content) if self._fmt is not None and not state.refusal else None
            events.append(ContentDoneEvent[Any](content=content, parsed=parsed))
        if state.refusal is not None and not state.refusal_done:
            state.refusal_done = True
            events.append(RefusalDoneEvent(refusal=_clean(state.refusal)))
        if state.logprobs_content is not None and not state.logprobs_content_done:
            state.logprobs_content_done = True
            events.append(LogprobsContentDoneEvent(content=state.logprobs_content))
        if state.logprobs_refusal is not None and not state.logprobs_refusal_done:
            state.logprobs_refusal_done = True
            events.append(LogprobsRefusalDoneEvent(refusal=state.logprobs_refusal))

    def _parsed(self, content: str) -> Any:
        assert self._fmt is not None
        from pydantic import ValidationError

        try:
            return self._fmt.validate(content)
        except (ValidationError, ValueError) as exc:
            from holysheep._core.structured_errors import StructuredOutputError

            shown = content if len(content) <= 200 else content[:200] + "..."
            raise StructuredOutputError(
                f"The streamed reply does not match response_format {self._fmt.name!r}: {exc}\nReply: {shown!r}. "
                "The full text is in .raw_text.", raw_text=content,
                validation_error=exc if isinstance(exc, ValidationError) else None,
                completion=self._snapshot()) from exc

    def _tool_done(self, state: _ChoiceState, index: int, events: list[object]) -> None:
        state.done_tools.add(index)
        name, arguments = (_clean(text) for text in state.tools.get(index, ["", ""]))
        events.append(FunctionToolCallArgumentsDoneEvent(name=name, index=index, arguments=arguments,
                                                         parsed_arguments=self._parse_arguments(name, arguments)))

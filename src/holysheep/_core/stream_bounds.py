"""What a stream keeps, in bounded and compact memory: its text as `Pieces` (joined in runs, so that millions of
small deltas cost about their own bytes) and the gaps between its output chunks as a fixed-size sample
(`sample_gap`). The cap on the text itself is ``max_stream_text_bytes`` (`StreamState` counts it). Both are
written for the per-chunk hot path: appending stays C-level, the Python here runs once per `RUN` pieces or once
the sample is full.

What the wire delivers is bounded too, not only the text (`wire_caps`): a choice and a tool call cost
`CHOICE_COST` / `TOOL_CALL_COST` bytes of the text cap (what keeping them costs, whether or not they bring
text), at most `MAX_CHOICES` choices and `MAX_TOOL_CALLS` tool calls, at most one SSE event per byte of the
text cap (beyond `EVENT_SLACK`) and `WIRE_PER_TEXT_BYTE` bytes of body per byte of it (beyond `WIRE_SLACK`)."""

from __future__ import annotations

from array import array

from holysheep._exceptions import StreamTooLargeError

__all__ = ["CHOICE_COST", "EVENT_SLACK", "MAX_CHOICES", "MAX_GAPS", "MAX_TOOL_CALLS", "RUN", "TOOL_CALL_COST",
           "WIRE_PER_TEXT_BYTE", "WIRE_SLACK", "Pieces", "StreamCaps", "sample_gap", "wire_caps"]

MAX_GAPS = 65536  # inter-token gaps a stream keeps for its percentiles (8 bytes each: 512 KiB at most)

RUN = 256  # pieces joined into one string: a str header (49 bytes) per run instead of per delta

MAX_CHOICES = 128  # choices one stream may open (OpenAI's largest ``n``)
MAX_TOOL_CALLS = 4096  # tool calls one stream may open, over all its choices
CHOICE_COST = 256  # bytes of the text cap a new choice costs (its slots in the state, its events' snapshots)
TOOL_CALL_COST = 256  # bytes of the text cap a new tool call costs (its dict, id, type and name slots)
EVENT_SLACK = 65_536  # SSE events a stream may send beyond one per byte of its text cap
WIRE_PER_TEXT_BYTE = 1024  # body bytes a stream may send per byte of its text cap (logprobs run ~300 a byte)
WIRE_SLACK = 1 << 20  # body bytes a stream may send beyond that (1 MiB)


def wire_caps(max_text_bytes: int) -> tuple[int, int]:
    """The most SSE events and body bytes one stream may deliver, for a text cap of ``max_text_bytes``: a real
    stream's events and bytes grow with its text, a hostile one's (keep-alives, empty choices, padding) do not."""
    return max_text_bytes + EVENT_SLACK, max_text_bytes * WIRE_PER_TEXT_BYTE + WIRE_SLACK


class Pieces(list[str]):
    """A list of text pieces whose owner calls `compact` once ``len(pieces) >= pieces.due``: the pieces past the
    joined ones become one string, so that the text kept is about its own size (``"".join(pieces)`` gives it
    whole)."""

    __slots__ = ("due", "joined")

    def __init__(self) -> None:
        super().__init__()
        self.joined = 0  # the leading items that are joined runs
        self.due = RUN

    def compact(self) -> None:
        self[self.joined:] = ["".join(self[self.joined:])]
        self.joined += 1
        self.due = self.joined + RUN


def sample_gap(sample: array[float], stride: int, index: int, gap: float) -> tuple[array[float], int]:
    """Keep gap number ``index`` (0-based) in ``sample``, every ``stride``-th gap: when the sample is full, every
    other kept gap is dropped and the stride doubles (evenly spaced, deterministic). Returns the sample and the
    stride to use from now on."""
    if index % stride:
        return sample, stride
    if len(sample) >= MAX_GAPS:
        sample, stride = sample[::2], stride * 2
        if index % stride:
            return sample, stride
    sample.append(gap)
    return sample, stride


class StreamCaps:
    """The counting half of a stream's state: the text kept (``max_text_bytes``) and what the wire delivered
    (choices, tool calls, events, body bytes; `wire_caps`). Passing a bound sets ``overflow`` to the chunk count
    and raises the subclass's `too_large`, which says which bound (``_why``: None for the text cap)."""

    __slots__ = ("_calls", "_choices", "_kept", "_max_events", "_max_text", "_max_wire", "_why", "_wire", "chunks",
                 "overflow")

    def __init__(self, max_text_bytes: int) -> None:
        self._max_text = max_text_bytes  # the most text kept (UTF-8 bytes): past it, StreamTooLargeError
        self._kept = 0
        self._max_events, self._max_wire = wire_caps(max_text_bytes)
        self._wire = 0  # body bytes fed
        self._choices: set[int] = set()  # the choice indices opened
        self._calls = 0  # the tool calls opened, over all choices
        self._why: str | None = None  # which bound the stream passed, when not the text cap
        self.overflow: int | None = None  # a bound was passed after this many chunks (the stream is over)
        self.chunks = 0

    def mark_end(self) -> None:  # pragma: no cover - the stream state stamps its end
        raise NotImplementedError

    def too_large(self) -> StreamTooLargeError:  # pragma: no cover - the stream state builds its error
        raise NotImplementedError

    def _over(self, why: str | None = None) -> None:
        """End the stream at a bound (``why``: which, None for the text cap) with `StreamTooLargeError`."""
        self._why = why
        self.mark_end()
        self.overflow = self.chunks
        raise self.too_large()

    def _count_wire(self, data: bytes) -> None:
        """Count ``data`` against the stream's body-byte cap."""
        self._wire += len(data)
        if self._wire > self._max_wire:
            self._over(f"{self._max_wire} bytes of body")

    def _count_events(self, events: int) -> None:
        """``events``: the SSE events dispatched so far, against the stream's event cap."""
        if events > self._max_events:
            self._over(f"{self._max_events} SSE events")

    def _keep(self, text: str, into: list[str] | None = None) -> str:
        """Count ``text`` against the cap. Past it the stream ends with `StreamTooLargeError`; ``into``: the
        pieces of choice 0's content, which then keep what fits of ``text``."""
        size = len(text) if text.isascii() else len(text.encode())
        self._kept += size
        if self._kept <= self._max_text:
            return text
        room = self._max_text - self._kept + size
        self._kept = self._max_text
        if into is not None and room > 0:
            into.append(text.encode()[:room].decode("utf-8", "ignore"))
        self._over()
        return text  # pragma: no cover - _over raises

    def _charge(self, size: int) -> None:
        """Count ``size`` bytes of structure (a choice, a tool call) against the text cap, as `_keep` counts text."""
        self._kept += size
        if self._kept > self._max_text:
            self._kept = self._max_text
            self._over()

    def _open_choice(self, idx: int) -> None:
        """A choice index seen for the first time: the first is free, each other costs `CHOICE_COST`."""
        if len(self._choices) >= MAX_CHOICES:
            self._over(f"{MAX_CHOICES} choices")
        self._choices.add(idx)
        if len(self._choices) > 1:
            self._charge(CHOICE_COST)

    def _open_call(self) -> None:
        """A new tool call: at most `MAX_TOOL_CALLS`, each costing `TOOL_CALL_COST`."""
        self._calls += 1
        if self._calls > MAX_TOOL_CALLS:
            self._over(f"{MAX_TOOL_CALLS} tool calls")
        self._charge(TOOL_CALL_COST)

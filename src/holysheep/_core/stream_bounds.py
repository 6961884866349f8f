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

__all__ = ["CHOICE_COST", "EVENT_SLACK", "MAX_CHOICES", "MAX_GAPS", "MAX_TOOL_CALLS", "RUN", "TOOL_CALL_COST",
           "WIRE_PER_TEXT_BYTE", "WIRE_SLACK", "Pieces", "sample_gap", "wire_caps"]

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

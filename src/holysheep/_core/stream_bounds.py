"""What a stream keeps, in bounded and compact memory: its text as `Pieces` (joined in runs, so that millions of
small deltas cost about their own bytes) and the gaps between its output chunks as a fixed-size sample
(`sample_gap`). The cap on the text itself is ``max_stream_text_bytes`` (`StreamState` counts it). Both are
written for the per-chunk hot path: appending stays C-level, the Python here runs once per `RUN` pieces or once
the sample is full."""

from __future__ import annotations

from array import array

__all__ = ["MAX_GAPS", "RUN", "Pieces", "sample_gap"]

MAX_GAPS = 65536  # inter-token gaps a stream keeps for its percentiles (8 bytes each: 512 KiB at most)

RUN = 256  # pieces joined into one string: a str header (49 bytes) per run instead of per delta


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

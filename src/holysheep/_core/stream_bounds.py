"""What a stream keeps, in bounded and compact memory: its text as `Pieces` (joined in runs, so that millions of
small deltas cost about their own bytes) and the gaps between its output chunks as `Gaps` (a fixed-size sample).
The cap on the text itself is ``max_stream_text_bytes`` (`StreamState` counts it)."""

from __future__ import annotations

from array import array

__all__ = ["MAX_GAPS", "RUN", "Gaps", "Pieces"]

MAX_GAPS = 65536  # inter-token gaps a stream keeps for its percentiles (8 bytes each: 512 KiB at most)


class Gaps:
    """The gaps between a stream's output chunks in bounded memory: their count and sum (the mean is exact),
    and a sample for the percentiles: every gap up to `MAX_GAPS`, then every 2nd, 4th, ... gap (evenly spaced,
    deterministic), so that a stream of any length keeps at most `MAX_GAPS` of them."""

    __slots__ = ("count", "sample", "stride", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.sample = array("d")
        self.stride = 1

    def add(self, gap: float) -> None:
        if self.count % self.stride == 0:
            if len(self.sample) >= MAX_GAPS:
                self.sample = self.sample[::2]
                self.stride *= 2
            if self.count % self.stride == 0:
                self.sample.append(gap)
        self.count += 1
        self.total += gap

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


RUN = 256  # pieces joined into one string: a str header (49 bytes) per run instead of per delta


class Pieces(list[str]):
    """A list of text pieces that joins every `RUN` appended pieces into one, so that the text kept is about
    its own size (``"".join(pieces)`` gives it whole)."""

    __slots__ = ("_run",)

    def __init__(self) -> None:
        super().__init__()
        self._run = 0

    def append(self, piece: str, /) -> None:
        super().append(piece)
        self._run += 1
        if self._run >= RUN:
            self[-RUN:] = ["".join(self[-RUN:])]
            self._run = 0

"""A rate learned from 429s, for servers that announce no usable limit (pure code, injected time).

When 429s arrive without ``x-ratelimit-*`` limits (or with only per-day ones, which say nothing about the
per-minute limit), the batch estimates the server's rate from what succeeded and paces to it. The model
follows AWS SDK's adaptive retry mode (a client-side token bucket whose rate follows CUBIC on throttling),
with two changes for servers of a few requests per second:

- the rate after a throttle starts from the **measured success rate** (what the server let through, an
  exponentially decayed count over `METER_TAU_S`), not from the send rate, and is cut by `BETA` only;
- the CUBIC curve is scaled to the rate: it is back at the measured rate `RECOVER_S` seconds after the
  throttle, then probes upward slowly (`PROBE`: +1 % 2.8 s beyond it, +10 % 6 s beyond it);
- until the second throttle whose meter has `MIN_WINDOW_S` behind it, the pace grows by `SLOW_START` a second
  (the throttles of the first burst, 64 requests sent before any reply, measured the start, not the refill);
- while the batch pauses for a 429's ``Retry-After``, the pace accrues one request, not the pause's worth
  (`LearnedBucket.hold`): one request goes when the pause ends, the next one a pace later;
- nothing is learned until `EVIDENCE` shows the 429s are many (a stray 429 is no limit);
- a drop below `FLOOR_SHARE` of the rate the pace was first learned from releases the pace (nothing learned)
  instead: 429s that come whatever the pace (a server refusing a share of requests at any rate) would cut it
  at every probe, down and down, since the success meter reads the pace less the refusals; a limit does not
  halve under a steady load. After each release the evidence must fill a window twice as long (up to
  `MAX_EVIDENCE_WINDOW`), so a background share of 429s does not soon pass for a limit again. (A limit that
  really fell by half is learned afresh from the evidence.)

A throttle counts once: a 429 to a request sent before the last decrease says nothing new. The state is a
list of floats (`STATE_FIELDS`) so a `LearnedBucket` can keep it in the key's shared file.
"""

from __future__ import annotations

import math
import struct
import time
from collections import deque

from holysheep._engine.key_limits import MAX_DEBT_S, STALE_S, Clock, SharedBucket, Sleep
from holysheep._private_state import warn_once

__all__ = ["BETA", "FLOOR_SHARE", "LEARNED_BURST_S", "MAX_EVIDENCE_WINDOW", "METER_TAU_S", "MIN_WINDOW_S", "PROBE",
           "RECOVER_S", "STATE_FIELDS",
           "LearnedBucket", "fresh_state", "measured_rate", "on_success", "on_throttle", "rate_at", "seed"]

BETA = 0.9
"""Share of the measured success rate the pace drops to on a throttle."""
RECOVER_S = 6.0
"""Seconds after a throttle at which the pace is back at the measured rate (CUBIC's K)."""
PROBE = (1.0 - BETA) / RECOVER_S ** 3
"""CUBIC's constant, relative to the measured rate: ``rate = max * (1 + PROBE * (t - RECOVER_S) ** 3)``."""
METER_TAU_S = 4.0
"""Time constant of the success meter (seconds)."""
MIN_WINDOW_S = 1.0
"""The meter never divides by less than this many seconds (a burst at the start is not a rate)."""
LEARNED_BURST_S = 0.5
"""Burst of the learned bucket, in seconds of its rate (at least one request)."""

SLOW_START = 0.25
"""Until the second throttle the pace grows by this share per second (the first throttle's measure is weak:
it has seen the start's burst, not the server's refill)."""

FLOOR_SHARE = 0.5
"""A drop below this share of the rate the pace was first learned from releases the pace instead."""

STATE_FIELDS = ("level", "stamp", "rate", "last_throttle", "last_max", "ok_count", "ok_stamp", "ok_first",
                "throttles", "first_max")
"""The state: the bucket's level and time stamp, the pace (0: none learned yet), the time of the last
decrease and the measured rate then, the success meter (decayed count, its stamp, its first success), the
throttles that moved the pace, and the rate the pace was first learned from."""
_RATE, _LAST, _MAX, _COUNT, _OK_STAMP, _OK_FIRST, _THROTTLES, _FIRST = 2, 3, 4, 5, 6, 7, 8, 9
EVIDENCE = (6, 20)
"""Nothing is learned until at least 6 of the last 20 replies were 429s (a stray 429 is no limit); once a pace
is learned, every throttle moves it. After a release the window doubles and the share stays."""
MAX_EVIDENCE_WINDOW = 160
"""The longest evidence window (after three releases): 48 of the last 160 replies."""
FLUSH_S = 0.1
"""A process adds its successes to the shared meter at most this often (one lock, not one per success)."""


def fresh_state(now: float) -> list[float]:
    """A state that knows nothing: no pace, no throttle, no success."""
    return [0.0, now, 0.0, -math.inf, 0.0, 0.0, now, math.nan, 0.0, 0.0]


def on_success(state: list[float], now: float) -> None:
    """Count a success in the meter, and move the pace along its curve."""
    if math.isnan(state[_OK_FIRST]):
        state[_OK_FIRST] = now
    state[_COUNT] = state[_COUNT] * math.exp(-max(0.0, now - state[_OK_STAMP]) / METER_TAU_S) + 1.0
    state[_OK_STAMP] = now
    if state[_RATE] > 0:
        state[_RATE] = rate_at(state, now)


def seed(state: list[float], successes: int, first: float | None, now: float) -> None:
    """Add ``successes`` counted since ``first`` to an empty meter, as a steady rate (what `measured_rate`
    then reads back); a meter that already has data (another process's) is left as it is."""
    if not successes or first is None or not math.isnan(state[_OK_FIRST]):
        return
    window = max(MIN_WINDOW_S, now - first)
    state[_OK_FIRST] = first
    state[_COUNT] = successes / window * METER_TAU_S * -math.expm1(-window / METER_TAU_S)
    state[_OK_STAMP] = now


def measured_rate(state: list[float], now: float) -> float:
    """Successes per second, from the decayed count (exact for a steady rate since the first success)."""
    if math.isnan(state[_OK_FIRST]):
        return 0.0
    count = state[_COUNT] * math.exp(-max(0.0, now - state[_OK_STAMP]) / METER_TAU_S)
    window = max(MIN_WINDOW_S, now - state[_OK_FIRST])
    rate: float = count / (METER_TAU_S * -math.expm1(-window / METER_TAU_S))
    return rate


def rate_at(state: list[float], now: float) -> float:
    """The pace ``now`` on the CUBIC curve of the last throttle."""
    if state[_THROTTLES] < 2:
        growth: float = (1.0 + SLOW_START) ** (now - state[_LAST])
        return state[_MAX] * BETA * growth
    t = now - state[_LAST] - RECOVER_S
    return state[_MAX] * (1.0 + PROBE * t * t * t)


def on_throttle(state: list[float], sent_at: float, now: float) -> bool:
    """A 429 (to a request sent at ``sent_at``): the pace drops to ``BETA`` of the measured rate (or of the
    pace, if lower). True when it dropped; False for a request sent before the last drop, or with no success
    seen yet to measure (then nothing is learned), or when the drop would take the pace below `FLOOR_SHARE`
    of the rate it was first learned from: then the pace is released (rate 0, nothing learned)."""
    if sent_at < state[_LAST]:
        return False
    measured = measured_rate(state, now)
    if measured <= 0:
        return False
    pace = rate_at(state, now) if state[_RATE] > 0 else 0.0
    top = measured if pace <= 0 else min(pace, max(measured, BETA * pace))
    if pace <= 0:
        state[_FIRST] = top
    elif top < FLOOR_SHARE * state[_FIRST]:  # cut down and down: 429s no pace removes, not a steady limit
        state[_RATE] = state[_MAX] = state[_THROTTLES] = state[_FIRST] = state[0] = 0.0
        state[_LAST] = now
        return False
    state[_MAX] = top
    state[_LAST] = now
    if state[_THROTTLES] == 0 or now - state[_OK_FIRST] >= MIN_WINDOW_S:
        state[_THROTTLES] += 1  # a throttle in the meter's first second measured the start, not the refill
    state[_RATE] = rate_at(state, now)
    return True


class LearnedBucket(SharedBucket):
    """The learned pace of one (base URL, key) as a token bucket: ``SharedBucket``'s interface and file, with
    the learned rate's state (`STATE_FIELDS`). While nothing is learned (rate 0) it never makes anyone wait,
    and successes are only counted (added to the shared meter every `FLUSH_S`)."""

    _format = struct.Struct("<" + "d" * len(STATE_FIELDS))

    def __init__(self, *, fd: int | None = None, clock: Clock = time.monotonic, sleep: Sleep | None = None) -> None:
        import asyncio
        import threading

        self.target = math.inf
        self.capacity_s = LEARNED_BURST_S
        self._fd = fd
        self._clock = clock
        self._sleep = sleep or asyncio.sleep
        self._lock = threading.Lock()
        self._state = fresh_state(clock())
        self._seen_rate = 0.0
        self._unflushed: list[float] = []  # times of successes not yet in the meter
        self._recent: deque[bool] = deque(maxlen=EVIDENCE[1])  # this process's last replies: True for a 429
        self._refused = 0
        self._evidence = EVIDENCE[0]  # 429s among the last ``self._recent.maxlen`` replies that show a limit
        self._quiet = True  # no 429 seen by this process yet: successes are only counted
        self._oks = 0
        self._first_ok: float | None = None
        self._peeked = 0.0
        self.active = False
        """True once a pace was learned (here or, seen through the shared file, by another process)."""
        self.throttles = 0
        """Throttles this process fed to the model (each lowered the pace)."""
        if fd is not None:
            with self._locked(refill=False) as state:
                now = clock()
                if state[1] == 0.0 or not 0 <= now - state[1] <= STALE_S:
                    state[:] = self._state  # a new (or stale) file: start from nothing

    @property
    def capacity(self) -> float:
        return max(1.0, self._seen_rate * self.capacity_s)

    def _fresh(self) -> list[float]:
        return fresh_state(self._clock())

    def _plausible(self, state: list[float]) -> bool:
        """Whether a learned state read from the shared file is one this model could have written: times not
        in the future, a pace of 0 (none learned) or of at least one request per ``MAX_DEBT_S``, and no wait
        longer than ``MAX_DEBT_S``. Anything else (a planted pace of one request a day) is ignored, with one
        warning."""
        level, stamp, rate = state[0], state[1], state[_RATE]
        now = self._clock() + 1.0
        ok = (math.isfinite(level) and math.isfinite(stamp) and math.isfinite(rate) and stamp <= now
              and state[_LAST] <= now and not state[_OK_STAMP] > now and not state[_OK_FIRST] > now
              and math.isfinite(state[_MAX]) and state[_MAX] >= 0 and 0 <= state[_THROTTLES] < 1e9
              and math.isfinite(state[_FIRST]) and state[_FIRST] >= 0
              and (rate == 0 or (rate >= 1 / MAX_DEBT_S and -level / rate <= MAX_DEBT_S)))
        if not ok:
            warn_once("learned-state", "A shared rate-limit file held a learned pace no batch writes (a wait far "
                      "beyond any limit, or numbers that are not finite): it was ignored and started afresh.")
        return ok

    def _refill(self, state: list[float]) -> None:
        now = self._clock()
        if state[_RATE] > 0:
            state[_RATE] = rate_at(state, now)
            elapsed = now - state[1]
            if elapsed > 0:
                state[0] = min(max(1.0, state[_RATE] * self.capacity_s), state[0] + elapsed * state[_RATE])
        state[1] = now

    def _delay(self, state: list[float], amount: float) -> float:
        if state[_RATE] <= 0:
            state[0] = amount  # nothing learned: never wait (the take below leaves the level at 0)
            return 0.0
        return super()._delay(state, amount)

    @property
    def learned(self) -> float | None:
        """The pace now (requests per second), None while nothing was learned."""
        rate = self._seen_rate
        return rate if rate > 0 else None

    def on_success(self) -> None:
        """Count a success (the meter is what a throttle measures the server's rate by). Until this process
        sees a 429 it only counts (a steady rate since the first success seeds the meter then) and looks at
        the shared state every `FLUSH_S`, in case another process learned a pace."""
        now = self._clock()
        if self._quiet:
            self._oks += 1
            if self._first_ok is None:
                self._first_ok = self._peeked = now
            elif now - self._peeked >= FLUSH_S:
                self._peeked = now
                with self._locked():
                    pass  # reads the shared pace into _seen_rate
                self.active = self._seen_rate > 0
            return
        self._remember(False)
        pending = self._unflushed
        pending.append(now)
        if now - pending[0] >= FLUSH_S:
            self._flush()

    def _remember(self, refused: bool) -> None:
        recent = self._recent
        if len(recent) == recent.maxlen and recent[0]:
            self._refused -= 1
        recent.append(refused)
        self._refused += refused

    def _flush(self) -> None:
        pending, self._unflushed = self._unflushed, []
        with self._locked() as state:
            if self._oks:  # the successes before the first 429, as a steady rate since the first of them
                seed(state, self._oks, self._first_ok, self._clock())
                self._oks = 0
            for when in pending:
                on_success(state, when)
        self.active = self._seen_rate > 0

    def hold(self, seconds: float) -> None:
        """The batch pauses ``seconds`` because the server asked it to: the pace accrues one request over the
        pause, not ``rate * seconds`` (capped at the burst). One request goes when the pause ends, the next
        one pace later; requests admitted before the pause wait for the pace again
        (`Admission.wait_out_pause`). Before, a second request went at the same instant, and a server that
        counts refusals answered it with another 429 (every throttle came in a chain of three)."""
        with self._locked() as state:
            if state[_RATE] > 0:
                state[0] = min(state[0], 1.0 - state[_RATE] * max(0.0, seconds))

    def on_rate_limited(self, sent_at: float | None = None) -> bool:
        """A 429 to a request sent at ``sent_at``: lower the pace (see `on_throttle`) and empty the bucket.
        True when the pace was lowered. When it was released instead, the evidence starts afresh over a window
        twice as long."""
        self._quiet = False
        self._remember(True)
        if self._seen_rate <= 0 and self._refused < self._evidence:
            return False
        self._flush()
        with self._locked() as state:
            now = self._clock()
            was_learned = state[_RATE] > 0
            lowered = on_throttle(state, now if sent_at is None else sent_at, now)
            state[0] = min(state[0], 0.0)
            state[1] = now
        if was_learned and self._seen_rate <= 0:
            window = min(MAX_EVIDENCE_WINDOW, 2 * (self._recent.maxlen or EVIDENCE[1]))
            self._recent = deque(maxlen=window)
            self._refused = 0
            self._evidence = EVIDENCE[0] * window // EVIDENCE[1]
        self.active = self._seen_rate > 0
        if lowered:
            self.throttles += 1
        return lowered

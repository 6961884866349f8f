"""What an item waits for before it goes out: the pause gate, a concurrency slot and the RPM/TPM buckets.

``Admission`` owns the load control of one batch. The RPM/TPM buckets are fixed (``rpm=600``) or
learned from the ``x-ratelimit-*`` headers the server sends (``rpm="auto"``, the default). A batch starts at
full concurrency: no round trip is waited for before the rest go. The limits the replies announce take over
as they come (the buckets start from what the server says remains, less the requests of the key still
unanswered), and an unknown limit is learned from 429s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from holysheep._core.log import get_logger
from holysheep._engine.key_limits import KEY_LIMITS, KeyLimits, SharedBucket
from holysheep._engine.learned_rate import LearnedBucket
from holysheep._engine.limits import AIMDLimiter, Clock, PauseGate, RetryPace, Sleep, TokenBucket, TokenEstimator
from holysheep._engine.options import BatchOptions
from holysheep._engine.results import BatchStats
from holysheep._engine.server_limits import (
    LEARNED_BURST_S,
    LEARNED_SHARE,
    LIMITS_MEMORY,
    LimitsMemory,
    ServerLimits,
    read_limits,
)

__all__ = ["Admission"]

logger = get_logger("holysheep.batch")


class Admission:
    """Load control for one batch: ``admit`` before a send, ``release`` after, and what it learns on the way."""

    def __init__(self, options: BatchOptions, *, clock: Clock, sleep: Sleep, memory_key: str | None = None,
                 memory: LimitsMemory = LIMITS_MEMORY, key_limits: KeyLimits = KEY_LIMITS) -> None:
        self._options = options
        self._clock, self._sleep = clock, sleep
        self.clock = clock
        """The batch's clock (what ``on_rate_limited``'s ``sent_at`` is on)."""
        self.limiter = AIMDLimiter(options.concurrency, adaptive=options.adaptive)
        self.gate = PauseGate(clock=clock, sleep=sleep)
        self.pace = RetryPace(options.retry_budget, clock=clock)
        self.estimator = TokenEstimator()
        self.rpm: TokenBucket | SharedBucket | None = self._fixed_bucket(options.rpm)
        self.tpm: TokenBucket | SharedBucket | None = self._fixed_bucket(options.tpm)
        self._key_limits = key_limits
        self.learned_rpm: float | None = None
        self.learned_tpm: float | None = None
        self._auto = options.rpm == "auto" or options.tpm == "auto"
        self._per_minute = False  # the server announces a per-minute request limit
        self.learned: LearnedBucket | None = None
        """rpm="auto": the pace learned from 429s while the server announces no per-minute request limit
        (shared by every batch on the key, like announced limits); it paces nobody until a 429."""
        if options.rpm == "auto":
            self.learned = LearnedBucket(clock=clock, sleep=sleep) if memory_key is None else key_limits.made(
                memory_key, "learned-requests", lambda fd: LearnedBucket(fd=fd, clock=clock, sleep=sleep))
        self.auto = self._auto
        """rpm or tpm is "auto": the limits are read from the replies."""
        self._turn = asyncio.Lock()
        self._waiting = 0  # workers inside admit(): while any, nobody is admitted at once (FIFO)
        self.stopped = False
        """Set by `stop`: nothing more is admitted."""
        self._admitting: set[asyncio.Task[object]] = set()  # the workers inside admit (a stop interrupts them)
        self._interrupted: set[asyncio.Task[object]] = set()
        self._memory, self._memory_key = memory, memory_key
        self._heard = False
        self._remaining: float | None = None  # what the last reply said remains of the request limit
        self._windows = [60.0, 60.0]  # the window of the request and token limits (longer once headers show it)
        self.stall_after_s = options.outage_after_s
        self.stalled: str | None = None
        """Why the batch cannot go on (a learned limit leaves the next request more than ``outage_after_s``
        away); the dispatcher stops the batch, resumably, when it is set."""
        self.remembered = False
        """True when the limits came from the memory of an earlier batch (this key got replies lately)."""
        if self._auto and memory_key is not None:
            known, limits = memory.recall(memory_key)
            if known:  # a batch in this process heard from this server lately: its limits apply at once
                self.remembered = True
                if limits is not None:
                    self._apply(limits, first=False)

    def _fixed_bucket(self, limit: float | str | None) -> TokenBucket | None:
        if limit is None or isinstance(limit, str):
            return None
        return TokenBucket.per_minute(limit, clock=self._clock, sleep=self._sleep)

    def admit_now(self, est_tokens: int | Callable[[], int]) -> int | None:
        """Admit at once when nothing stands in the way (nobody waiting, no pause, a free slot, room in the
        buckets): the tokens charged; None when the worker must ``await admit``."""
        gate = self.gate
        if self._waiting or (gate.resume_at and gate.paused) or not self.limiter.try_acquire():
            return None
        rpm, tpm = self.rpm, self.tpm
        charge = 0
        if tpm is not None:
            charge = self._estimate(est_tokens)
            if not tpm.take_now(charge):
                self.limiter.release()
                return None
        if rpm is not None and not rpm.take_now(1):
            if tpm is not None:
                tpm.adjust(charge)
            self.limiter.release()
            return None
        learned = self.learned
        if learned is not None and learned.active and not learned.take_now(1):
            if rpm is not None:
                rpm.adjust(1)
            if tpm is not None:
                tpm.adjust(charge)
            self.limiter.release()
            return None
        return charge

    def _pacing(self) -> LearnedBucket | None:
        """The learned pace when it applies: something was learned from 429s. It applies whatever the headers
        say: an announced limit is believed only while it agrees with what happens, and 429s that show a limit
        (`learned_rate.EVIDENCE`) below it mean the real limit is lower."""
        learned = self.learned
        if learned is None or not learned.active:
            return None
        return learned

    def _minute_limit(self) -> bool:
        """True when the server announces a per-minute request limit (its bucket paces; 429s lower it)."""
        return self._per_minute

    def _estimate(self, est_tokens: int | Callable[[], int]) -> int:
        """The TPM charge for a raw estimate (or the function that gives it)."""
        return self.estimator.estimate(est_tokens if isinstance(est_tokens, int) else est_tokens())

    async def admit(self, est_tokens: int | Callable[[], int]) -> int | None:
        """Wait for the pause gate, a concurrency slot and the buckets; the tokens charged to the TPM bucket,
        or None when the batch stopped meanwhile (`stop`; nothing is held then).

        ``est_tokens`` is the request's raw token estimate, or a function that gives it (asked only when
        a TPM bucket applies).

        Workers are admitted one at a time, in the order they asked (a FIFO lock), so only one of them
        waits on the gate and the buckets at any moment. A stop wakes every one of them at once: a stopped
        batch hands back its unfinished items at once, not one per bucket wait (the issue saw one every 17.7 s)."""
        if self.stopped:
            return None
        task = asyncio.current_task()
        self._waiting += 1
        if task is not None:
            self._admitting.add(task)
        try:
            return await self._admit(est_tokens)
        except asyncio.CancelledError:
            if task is None or task not in self._interrupted:
                raise
            self._interrupted.discard(task)
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: another cancel (aclose) still pending?
            if uncancel is not None and uncancel() > 0:
                raise
            return None
        finally:
            self._waiting -= 1
            if task is not None:
                self._admitting.discard(task)

    async def _admit(self, est_tokens: int | Callable[[], int]) -> int:
        async with self._turn:
            await self.gate.wait()
            await self.limiter.acquire()
            try:
                return await self._take(est_tokens)
            except BaseException:  # interrupted by a stop: the slot goes back
                self.limiter.release()
                raise

    async def _take(self, est_tokens: int | Callable[[], int]) -> int:
        charge = 0
        if self.rpm is not None and not self._stalls(self.rpm, 1, self.learned_rpm, "request"):
            await self.rpm.take(1)
        learned = self._pacing()
        if learned is not None:
            await learned.take(1)
        if self.tpm is not None and self.stalled is None:
            charge = self._estimate(est_tokens)
            if self._stalls(self.tpm, charge, self.learned_tpm, "token"):
                return 0
            await self.tpm.take(charge)
        if self.gate.paused:  # a pause began while this worker waited: it goes when the pause ends
            await self.gate.wait()
        return charge

    def stop(self) -> None:
        """The batch stopped: lift any pause, and interrupt every worker waiting in `admit` (it returns None)."""
        self.stopped = True
        self.gate.resume_at = 0.0
        for task in self._admitting:
            if task not in self._interrupted:
                self._interrupted.add(task)
                task.cancel()

    def _stalls(self, bucket: TokenBucket | SharedBucket, amount: float, learned: float | None, what: str) -> bool:
        """True (and `stalled` set) when a learned bucket would make the batch wait longer than
        ``outage_after_s`` with nothing in flight: no progress that long stops the batch, resumably."""
        if learned is None or self.stall_after_s <= 0:
            return False
        delay = bucket.delay_for(amount)
        if delay <= self.stall_after_s:
            return False
        self.stalled = (f"no progress: the {what} limit the server announced leaves the next request {delay:.0f} s "
                        f"away, longer than outage_after_s={self.stall_after_s:g}")
        return True

    @property
    def probing(self) -> bool:
        """True until the first reply of an "auto" batch told the limits (requests sent meanwhile are counted
        with the key's unanswered ones: `probe_sent`)."""
        return self._auto and not self._heard and not self.remembered

    def probe_sent(self) -> bool:
        """Called as a request goes out: True when the key's limits are not known yet, counted with the key's
        other requests sent so (`KeyLimits.probe_sent`) until `probe_answered`: a bucket made from a reply
        meanwhile starts that much lower (the ``remaining`` it announces may not count them yet)."""
        if self._memory_key is None or not self.probing:
            return False
        self._key_limits.probe_sent(self._memory_key)
        return True

    def probe_answered(self) -> None:
        """A request `probe_sent` counted got its reply (before the reply's limits are learned), or none."""
        if self._memory_key is not None:
            self._key_limits.probe_answered(self._memory_key)

    def release(self) -> None:
        """Give back the concurrency slot of a request that ended."""
        self.limiter.release()

    def learn(self, headers: Mapping[str, str] | None) -> float | None:
        """rpm/tpm="auto": follow the limits the server announces (a bucket per limit, set to what the first
        reply says remains, retuned in place when the limit changes: the level is kept).

        Implausible values are ignored and logged once. Returns how long the whole batch should pause when
        the server says nothing remains until its reset and gives no limit to pace at; else None."""
        if not self._auto or headers is None:
            return None
        limits = read_limits(headers)
        self._remaining = None if limits is None else limits.remaining_requests
        first_reply, self._heard = not self._heard, True
        if self._memory_key is not None and (limits is not None or first_reply):
            self._memory.remember(self._memory_key, limits)  # None: the server announces no limits
        if limits is None:
            return None
        for what in limits.ignored:
            if self._memory.first_warning(self._memory_key, what):
                logger.warning("ignored an implausible rate limit the server announced (%s); the batch paces by "
                               "its other limits and by 429s", what)
        self._apply(limits, first=self.learned_rpm is None and self.learned_tpm is None)
        pause = None
        for auto, limit, remaining, reset in (
                (self._options.rpm, limits.limit_requests, limits.remaining_requests, limits.reset_requests_s),
                (self._options.tpm, limits.limit_tokens, limits.remaining_tokens, limits.reset_tokens_s)):
            if auto == "auto" and remaining == 0 and not limit and reset:
                pause = max(pause or 0.0, reset)
        return pause

    def _apply(self, limits: ServerLimits, *, first: bool) -> None:
        """Follow one reply's limits: a bucket per announced limit (with a memory key: one per base URL and key,
        shared by every batch and process using it), and what the server says remains caps its level."""
        if self._options.rpm == "auto" and limits.limit_requests:
            window = self._windows[0] = limits.requests_window_s() or self._windows[0]
            self.rpm = self._learned_bucket("requests", self.rpm, limits.limit_requests / window,
                                            limits.remaining_requests, first)
            self.learned_rpm = limits.limit_requests * 60.0 / window
            self._per_minute = window <= 60.0
        if self._options.tpm == "auto" and limits.limit_tokens:
            window = self._windows[1] = limits.tokens_window_s() or self._windows[1]
            self.tpm = self._learned_bucket("tokens", self.tpm, limits.limit_tokens / window, limits.remaining_tokens,
                                            first)
            self.learned_tpm = limits.limit_tokens * 60.0 / window

    def _learned_bucket(self, kind: str, bucket: TokenBucket | SharedBucket | None, rate: float,
                        remaining: float | None, first: bool) -> TokenBucket | SharedBucket:
        rate *= LEARNED_SHARE
        if self._memory_key is not None:  # one bucket per (base URL, key): the limit is the key's, not the batch's
            shared = self._key_limits.bucket(self._memory_key, kind, rate, LEARNED_BURST_S, clock=self._clock,
                                             sleep=self._sleep, level=remaining)
            if remaining is not None:  # every reply: what remains on the server is what other clients left
                shared.cap(remaining)
            return shared
        if not isinstance(bucket, TokenBucket):
            bucket = TokenBucket(rate, rate * LEARNED_BURST_S, clock=self._clock, sleep=self._sleep)
        elif bucket.rate != rate:
            bucket.retune(rate, rate * LEARNED_BURST_S)
        if remaining is not None and (first or remaining == 0):
            bucket.level = remaining if first else min(bucket.level, remaining)  # first: the announced burst
        return bucket

    def pause_for(self, seconds: float) -> None:
        """The server asked for room: the whole batch waits ``seconds`` (`PauseGate`), and the learned pace
        accrues nothing meanwhile (`LearnedBucket.hold`)."""
        gate = self.gate
        gate.pause_for(seconds)
        learned = self._pacing()
        if learned is not None:
            learned.hold(gate.resume_at - self._clock())

    async def wait_out_pause(self) -> None:
        """For a request admitted before a pause began: wait until the pause ends, then for the learned pace
        again (the 429 that paused the batch emptied the bucket its token came from)."""
        await self.gate.wait()
        learned = self._pacing()
        if learned is not None:
            await learned.take(1)

    def on_rate_limited(self, epoch: int, sent_at: float | None = None) -> None:
        """A 429 (to a request sent at ``sent_at`` on the batch's clock): halve the concurrency (once per
        epoch) and lower the key's announced-limit rates (AIMD), or, without a per-minute limit announced,
        its learned pace (see ``learned_rate``)."""
        self.limiter.on_rate_limited(epoch)
        minute = self._minute_limit()
        for bucket in (self.rpm, self.tpm) if minute else (self.tpm,):  # a day's limit is not what refused it
            if isinstance(bucket, SharedBucket):
                bucket.on_rate_limited()
        # Whatever the headers say, 429s that show a lower limit are learned from; a 429 whose reply says no
        # request remains of an announced per-minute limit agrees with it (the key's clients spent it), and
        # the announced bucket's AIMD above is what answers it.
        agrees = minute and self._remaining is not None and self._remaining < 1
        if self.learned is not None and not agrees:
            self.learned.on_rate_limited(sent_at)

    def on_success(self) -> None:
        """A success: the concurrency and the learned rates grow back."""
        self.limiter.on_success()
        rpm, tpm = self.rpm, self.tpm
        if isinstance(rpm, SharedBucket):
            rpm.on_success()
        if isinstance(tpm, SharedBucket):
            tpm.on_success()
        learned = self.learned
        if learned is not None:
            learned.on_success()


    def settle_tokens(self, charge: int, actual: int) -> None:
        """Correct a TPM charge once a reply told the real usage (``actual=0``: unknown, keep the charge)."""
        if self.tpm is not None and charge and actual:
            self.tpm.adjust(charge - actual)

    def refund_tokens(self, charge: int) -> None:
        """Give back a TPM charge whose request failed."""
        if self.tpm is not None and charge:
            self.tpm.adjust(charge)

    def fill(self, stats: BatchStats) -> None:
        """Copy what load control saw into ``stats``."""
        limiter, gate = self.limiter, self.gate
        stats.concurrency = limiter.limit
        stats.concurrency_min = limiter.lowest
        stats.concurrency_decreases = limiter.decreases
        stats.peak_in_flight = limiter.peak_in_flight
        stats.pauses = gate.pauses
        stats.paused_s = gate.paused_s
        stats.retries_paced = self.pace.paced
        stats.learned_rpm = self.learned_rpm
        stats.learned_tpm = self.learned_tpm
        pace = self.learned.learned if self.learned is not None else None
        stats.paced_rpm = None if pace is None else round(pace * 60.0, 1)

"""What a batch returns: one `BatchResult` per input, `BatchResults`, live stats and the summary."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeVar

from holysheep._exceptions import HolySheepError

if TYPE_CHECKING:  # the public result's type for readers (the engine reads no field of it)
    from holysheep._core.tool_results import ToolCallRecord, ToolRun, ToolRunResult
    from holysheep.types.chat import ChatCompletion

ReplyT = TypeVar("ReplyT", covariant=True, default="ChatCompletion")
"""The reply type of a batch's results: `ChatCompletion` unless said (``BatchResults[Response,
ResponseToolRunResult]`` for ``client.responses.batch``); a reply of the batch's format."""
ToolRunT = TypeVar("ToolRunT", covariant=True, bound="ToolRun", default="ToolRunResult")
"""The type of an agent item's ``tool_run``: chat's `ToolRunResult` unless said."""

__all__ = [
    "BatchCancelledError",
    "BatchFailedError",
    "BatchInterrupted",
    "BatchResult",
    "BatchResults",
    "BatchStats",
    "BatchSummary",
    "BatchUnfinishedError",
    "ReplyT",
    "ToolRunT",
]


class BatchCancelledError(HolySheepError):
    """The error of an item that did not finish because the batch was cancelled (Ctrl-C, task cancel)."""


class BatchUnfinishedError(HolySheepError):
    """The error of an item that was never finished because the batch stopped (an outage, a 401, exhausted
    quota, or a server asking to wait longer than ``max_pause_s``). The item itself may be fine: run it
    again later (``holysheep batch --resume`` re-runs such lines). ``stop_reason`` says why; ``last_error``
    is the item's own last error, if it had one."""

    def __init__(self, message: str, *, stop_reason: str, last_error: BaseException | None = None) -> None:
        super().__init__(message)
        self.stop_reason = stop_reason
        self.last_error = last_error


@dataclass(slots=True)
class BatchResult(Generic[ReplyT, ToolRunT]):
    """The outcome of one input: ``response`` when ``ok``, else ``error`` (the typed error that ended it).

    Generic in the reply type and the tool run's: plain ``BatchResult`` is a chat completions result
    (``BatchResult[ChatCompletion, ToolRunResult]``); ``client.responses.batch`` gives
    ``BatchResult[Response, ResponseToolRunResult]`` items (the parameters are for the type checker only).

    ``index`` is the input position; ``attempts`` counts requests sent (0 when it never ran);
    ``latency_s`` runs from its first request to its final outcome, retries and pauses included.
    The batch never changes a result once delivered. (Not a frozen dataclass: building one costs about
    three times as much, once per item.)
    """

    index: int
    custom_id: str | None
    response: ReplyT | None = None
    error: BaseException | None = None
    attempts: int = 0
    latency_s: float = 0.0
    tool_run: ToolRunT | None = None
    """An agent item's run (``tools=[functions]``): transcript, every tool call, usage and cost. In a batch of
    Responses items it is a ``ResponseToolRunResult`` (the same names: ``completion``, ``messages``,
    ``tool_calls``, ``turns``, ``usage``, ``cost``), as ``response`` is a ``Response`` there (and so typed)."""

    @property
    def ok(self) -> bool:
        """True when the item has a response."""
        return self.error is None

    @property
    def cached(self) -> bool:
        """True when the response came from the response cache (no request was sent for it)."""
        return getattr(self.response, "served_by", None) == "cache"  # (None when it failed)

    @property
    def messages(self) -> list[dict[str, Any]] | None:
        """An agent item's transcript (its messages, every assistant turn and tool result); None otherwise."""
        return self.tool_run.messages if self.tool_run is not None else None

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """An agent item's tool calls, each with its result and duration (empty otherwise)."""
        return self.tool_run.tool_calls if self.tool_run is not None else []

    @property
    def parsed(self) -> Any:
        """The validated object (``choices[0].message.parsed``) when the batch ran with
        ``response_format=Model``; ``None`` otherwise or when the item failed."""
        choices = getattr(self.response, "choices", None)
        return getattr(choices[0].message, "parsed", None) if choices else None


class BatchFailedError(HolySheepError, Generic[ReplyT, ToolRunT]):
    """Raised by `BatchResults.responses` when items failed; ``failed`` lists their results."""

    def __init__(self, failed: Sequence[BatchResult[ReplyT, ToolRunT]], total: int) -> None:
        kinds = Counter(type(r.error).__name__ for r in failed)
        first = failed[0]
        detail = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
        super().__init__(
            f"{len(failed)} of {total} batch items failed ({detail}); first: item {first.index}"
            f"{f' ({first.custom_id})' if first.custom_id else ''}: {first.error}. "
            "Use results.failed, or results.get_responses(allow_failures=True).")
        self.failed: list[BatchResult[ReplyT, ToolRunT]] = list(failed)


@dataclass
class BatchStats:
    """Live counters of a running batch (what the progress bar and ``on_progress`` see)."""

    total: int | None = None
    """Items in the input, when known (a sized input)."""
    done: int = 0
    """Items finished (succeeded or failed)."""
    succeeded: int = 0
    """Items that ended with a response."""
    failed: int = 0
    """Items that ended with an error."""
    requests: int = 0
    """HTTP requests sent, retries and structured-output re-asks included."""
    retries: int = 0
    """Retries sent (backoff, a 429 pause or a long Retry-After), counted as they go out: ``requests`` is the
    items sent plus ``retries`` (plus re-asks and agent turns); a retry a stop ended before it went out is none."""
    rate_limited: int = 0
    """Replies that were 429 (not counting exhausted quota)."""
    prompt_tokens: int = 0
    """Prompt tokens billed, over every request."""
    completion_tokens: int = 0
    """Completion tokens billed, over every request."""
    cost_usd: float = 0.0
    """Cost in USD from the price catalog (see `cost_known`)."""
    cost_known: bool = False
    """True once any reply's model had a known price."""
    cached: int = 0
    """Items answered from the response cache (no request, no cost; not in `requests` or the tokens)."""
    cache_saved_usd: float = 0.0
    """What the cached answers cost when they were fetched: the saving of this run."""
    max_cost_usd: float | None = None
    """The batch's cost cap (`max_cost_usd=`), if any."""
    spent_usd: float = 0.0
    """With a cap: what the replies cost at the batch's prices (a reply without usage counts its reservation)."""
    overbilled: int = 0
    """With a cap: replies the server billed more than was reserved for them (reasoning, images, output past
    the request's limits); each counted in full."""
    overbilled_usd: float = 0.0
    """With a cap: what those replies cost beyond their reservations."""
    started_at: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when the batch started."""
    finished_at: float | None = None
    """`time.monotonic()` when it finished (None while running)."""
    concurrency: float = 0.0
    """The AIMD concurrency limit now."""
    concurrency_max: int = 0
    """The concurrency asked for (`concurrency=`)."""
    concurrency_min: float = 0.0
    """The lowest the AIMD limit went after rate limits."""
    concurrency_decreases: int = 0
    """How often a rate limit halved the concurrency limit."""
    peak_in_flight: int = 0
    """Most requests in flight at once."""
    pauses: int = 0
    """Batch-wide pauses (429 or Retry-After)."""
    paused_s: float = 0.0
    """Seconds spent in those pauses."""
    retries_paced: int = 0
    """Retries the retry budget delayed (never refused)."""
    learned_rpm: float | None = None
    """Requests per minute the server announced (`x-ratelimit-limit-requests`), if any."""
    learned_tpm: float | None = None
    """Tokens per minute the server announced (`x-ratelimit-limit-tokens`), if any."""
    paced_rpm: float | None = None
    """The pace learned from 429s, in requests per minute, when the server refused requests often enough to
    show a limit (none announced, or one it did not keep); None when nothing was learned."""
    stop_reason: str | None = None
    """Why the batch stopped early (401, exhausted quota, an outage...), else None."""
    errors: Counter[str] = field(default_factory=Counter)
    """Failed items by error class name."""

    @property
    def elapsed_s(self) -> float:
        """Seconds since the batch started (until it finished)."""
        end = self.finished_at if self.finished_at is not None else time.monotonic()
        return end - self.started_at

    @property
    def rate(self) -> float:
        """Finished items per second so far."""
        elapsed = self.elapsed_s
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, when the total is known."""
        if self.total is None or self.done == 0:
            return None
        return max(0, self.total - self.done) / self.rate if self.rate > 0 else None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def input_tokens(self) -> int:
        """Input tokens billed over every request (every format's input; ``prompt_tokens`` in the summary)."""
        return self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        """Output tokens billed over every request (``completion_tokens`` in the summary)."""
        return self.completion_tokens

    def add_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Count a reply's tokens (its wire format's input and output, in the summary's prompt/completion)."""
        self.prompt_tokens += input_tokens
        self.completion_tokens += output_tokens


@dataclass(frozen=True)
class BatchSummary:
    """Totals of a finished batch: counts, tokens, cost, time, throughput, and how load control behaved."""

    total: int
    succeeded: int
    failed: int
    requests: int
    retries: int
    rate_limited: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float | None
    cached: int
    cache_saved_usd: float
    max_cost_usd: float | None
    spent_usd: float | None
    wall_s: float
    requests_per_s: float
    concurrency_max: int
    concurrency_final: float
    concurrency_min: float
    concurrency_decreases: int
    peak_in_flight: int
    pauses: int
    paused_s: float
    retries_paced: int
    learned_rpm: float | None
    learned_tpm: float | None
    stop_reason: str | None
    errors: dict[str, int]
    paced_rpm: float | None = None
    """The pace learned from 429s (requests per minute) when the server announced no per-minute limit."""
    overbilled: int = 0
    """Replies billed more than was reserved for them under ``max_cost_usd`` (see `BatchStats.overbilled`)."""
    overbilled_usd: float = 0.0
    """What they cost beyond their reservations."""

    @classmethod
    def from_stats(cls, stats: BatchStats, total: int) -> BatchSummary:
        wall = stats.elapsed_s
        return cls(
            total=total, succeeded=stats.succeeded, failed=stats.failed, requests=stats.requests,
            retries=stats.retries, rate_limited=stats.rate_limited, prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens, total_tokens=stats.tokens,
            cost_usd=round(stats.cost_usd, 6) if stats.cost_known else None, cached=stats.cached,
            cache_saved_usd=round(stats.cache_saved_usd, 6), max_cost_usd=stats.max_cost_usd,
            spent_usd=round(stats.spent_usd, 6) if stats.max_cost_usd is not None else None, wall_s=round(wall, 3),
            requests_per_s=round(stats.requests / wall, 2) if wall > 0 and stats.requests else 0.0,
            concurrency_max=stats.concurrency_max, concurrency_final=round(stats.concurrency, 2),
            concurrency_min=round(stats.concurrency_min, 2), concurrency_decreases=stats.concurrency_decreases,
            peak_in_flight=stats.peak_in_flight, pauses=stats.pauses, paused_s=round(stats.paused_s, 3),
            retries_paced=stats.retries_paced, learned_rpm=stats.learned_rpm, learned_tpm=stats.learned_tpm,
            stop_reason=stats.stop_reason, errors=dict(stats.errors), paced_rpm=stats.paced_rpm,
            overbilled=stats.overbilled, overbilled_usd=round(stats.overbilled_usd, 6),
        )

    def to_dict(self) -> dict[str, Any]:
        """The summary as a plain dict (JSON-serialisable)."""
        return asdict(self)

    def __str__(self) -> str:
        cost = "unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        lines = [
            f"{self.succeeded + self.failed:,}/{self.total:,} done, {self.failed:,} failed"
            + (f" (stopped: {self.stop_reason})" if self.stop_reason else ""),
            f"requests {self.requests:,} ({self.retries:,} retries; {self.rate_limited:,} answered 429 "
            f"\"slow down\")",
            f"tokens {self.total_tokens:,} (prompt {self.prompt_tokens:,}, completion {self.completion_tokens:,}), "
            f"cost {cost}" + (f", spent ${self.spent_usd:.4f} of the ${self.max_cost_usd:.4f} cap"
                              if self.max_cost_usd is not None and self.spent_usd is not None else ""),
            f"wall {self.wall_s:.2f} s, {self.requests_per_s:.1f} req/s, at most {self.peak_in_flight:,} "
            f"in flight (concurrency {self.concurrency_max:,}"
            + (f", lowered to {int(self.concurrency_min):,} after rate limits)" if self.concurrency_decreases else ")"),
        ]
        if self.overbilled:
            lines.append(f"warning: the server billed ${self.overbilled_usd:.4f} more than was asked for on "
                         f"{self.overbilled:,} repl{'y' if self.overbilled == 1 else 'ies'} (reasoning, images or "
                         "output past max_tokens); the billed figure counts against the cap")
        if self.pauses:
            lines.append(f"paused {self.pauses:,} time{'s' if self.pauses != 1 else ''} ({self.paused_s:.1f} s) "
                         "when the server asked to wait")
        if self.cached:
            lines.append(f"{self.cached} answered from the cache (no request), saving ${self.cache_saved_usd:.4f}")
        if self.learned_rpm is not None or self.learned_tpm is not None:
            learned = [f"{v:,.0f} {unit}" for v, unit in ((self.learned_rpm, "RPM"), (self.learned_tpm, "TPM"))
                       if v is not None]
            lines.append("rate limits announced by the server: " + ", ".join(learned))
        if self.paced_rpm is not None:
            lines.append(f"paced at {self.paced_rpm:,.0f} RPM, learned from 429s" + (
                " (the server announced no per-minute limit)" if self.learned_rpm is None
                else " (the limit the server announced did not hold)" if self.paced_rpm < self.learned_rpm else ""))
        if self.errors:
            lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())))
        return "\n".join(lines)


class BatchResults(Sequence[BatchResult[ReplyT, ToolRunT]], Generic[ReplyT, ToolRunT]):
    """The results of a batch, one per input, in input order (a read-only sequence).

    Generic as `BatchResult`: plain ``BatchResults`` holds chat completions; ``client.responses.batch`` returns
    ``BatchResults[Response, ResponseToolRunResult]``, ``client.wire(fmt).batch`` that format's replies."""

    def __init__(self, results: list[BatchResult[ReplyT, ToolRunT]], stats: BatchStats) -> None:
        self._results = results
        self._stats = stats

    @overload
    def __getitem__(self, i: int) -> BatchResult[ReplyT, ToolRunT]: ...
    @overload
    def __getitem__(self, i: slice) -> list[BatchResult[ReplyT, ToolRunT]]: ...
    def __getitem__(self, i: int | slice) -> BatchResult[ReplyT, ToolRunT] | list[BatchResult[ReplyT, ToolRunT]]:
        return self._results[i]

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[BatchResult[ReplyT, ToolRunT]]:
        return iter(self._results)

    @property
    def responses(self) -> list[ReplyT]:
        """Every response in input order; raises `BatchFailedError` if any item failed."""
        failed = self.failed
        if failed:
            raise BatchFailedError(failed, len(self._results))
        return [r.response for r in self._results if r.response is not None]

    def get_responses(self, *, allow_failures: bool = False) -> list[ReplyT | BaseException]:
        """Responses in input order; with ``allow_failures=True`` a failed item gives its error instead."""
        if not allow_failures:
            return list(self.responses)
        return [r.response if r.response is not None else r.error  # type: ignore[misc]
                for r in self._results]

    @property
    def succeeded(self) -> list[BatchResult[ReplyT, ToolRunT]]:
        """Results that have a response."""
        return [r for r in self._results if r.ok]

    @property
    def failed(self) -> list[BatchResult[ReplyT, ToolRunT]]:
        """Results that ended with an error."""
        return [r for r in self._results if not r.ok]

    @property
    def stats(self) -> BatchStats:
        """The live counters this batch finished with."""
        return self._stats

    def summary(self) -> BatchSummary:
        """Succeeded / failed / retries / tokens / cost / wall time / req per s / AIMD and pauses."""
        return BatchSummary.from_stats(self._stats, len(self._results))

    def __repr__(self) -> str:
        return f"<BatchResults {len(self._results)} items: {self._stats.succeeded} ok, {self._stats.failed} failed>"


class BatchInterrupted(KeyboardInterrupt, Generic[ReplyT, ToolRunT]):
    """Ctrl-C stopped a sync batch. ``results`` holds every input seen so far, in order: finished items
    as they ended, the rest with `BatchCancelledError`. Uncaught, it ends a script with exit
    status 130, as Ctrl-C and ``holysheep batch`` do. It is a ``KeyboardInterrupt`` (not an
    ``Exception``), so ``except Exception`` handlers do not swallow a Ctrl-C."""

    def __init__(self, results: BatchResults[ReplyT, ToolRunT]) -> None:
        from holysheep._engine.exit import install_exit_hook

        install_exit_hook(BatchInterrupted)
        super().__init__(f"batch interrupted: {results._stats.done} of {len(results)} items finished")
        self.results = results

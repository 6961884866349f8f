"""One attempt of one batch item: send it, then finish it, retry it (backoff or pause) or stop the batch.

``AttemptRunner`` runs after the dispatcher has admitted an item. Each item holds the client's
``CallPlan`` (made by ``ItemPlanner``, in ``item_plans``): the client's ``Call`` writes the attempt headers
and decides every retry (policy, delay, ``on_retry`` hook, fallbacks). The runner only decides *when* a
retry goes: a 429 or Retry-After pauses the whole batch, retries beyond the budget's share are paced, and
an outage stops the batch.
It also owns the batch's stop: once stopped, nothing more is sent and unfinished items end at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from holysheep._core.call import Outcome
from holysheep._core.log import get_logger
from holysheep._core.retry import RetryPolicy, is_quota_exhausted, is_retryable
from holysheep._core.wire import TokenUsage, WireFormat, wire_of
from holysheep._engine.admission import Admission
from holysheep._engine.delivery import ResultSink
from holysheep._engine.item_plans import ItemPlanner
from holysheep._engine.limits import OutageDetector
from holysheep._engine.options import BatchOptions
from holysheep._engine.requests import BatchRequest, possible_tokens
from holysheep._engine.results import BatchUnfinishedError
from holysheep._engine.sender import Sender
from holysheep._engine.spend import DEFAULT_OUTPUT_BOUND, SpendCap, assumption, output_token_bound
from holysheep._engine.work_queue import WorkQueue
from holysheep._exceptions import (
    APIError,
    APIStatusError,
    AuthenticationError,
    ClientClosedError,
    InvalidRequestError,
)

if TYPE_CHECKING:
    from holysheep.cache import ResponseCache

__all__ = ["AttemptRunner"]

logger = get_logger("holysheep.batch")


class AttemptRunner:
    """Sends admitted items through the client's sender and settles each attempt's outcome."""

    def __init__(self, sender: Sender, options: BatchOptions, *, queue: WorkQueue, admission: Admission,
                 sink: ResultSink, outage: OutageDetector, spend: SpendCap | None = None,
                 cache: ResponseCache | None = None) -> None:
        self._sender = sender
        self.spend = spend
        self.cache = cache
        self._options = options
        self._queue = queue
        self._admission = admission
        self._sink = sink
        self._outage = outage
        self.stats = sink.stats
        self._usage_capped = False
        self._usage_doubted = False  # a reply's usage could not be true (said once per batch)
        self.abort: BaseException | None = None
        """Set once the batch stopped: the error every unfinished item ends with."""
        self.planner = ItemPlanner(sender, queue=queue, sink=sink)
        """Each item's next request (its CallPlan) and the steps of its re-ask or tool loop."""
        self.planner.key_seed = options.idempotency_seed

    async def run(self, item: BatchRequest, charge: int) -> None:
        """Send one attempt of an admitted ``item`` (holding a concurrency slot and ``charge`` TPM tokens)."""
        admission = self._admission
        epoch = admission.limiter.epoch
        plan = self.planner.plan(item)
        if plan is None:  # the item's parameters are invalid: it is finished, nothing was sent
            self.refund(item)
            admission.release()
            return
        if item.key is None:
            item.key = plan.call.headers.get("idempotency-key")  # kept if the item is ever re-planned
        if item.attempts == 0:
            admission.pace.on_first_attempt()
            item.first_sent = time.perf_counter()
        item.attempts += 1
        self.stats.requests += 1
        if item.retrying:  # counted when it goes out: a retry the stop ended before it was sent is none
            item.retrying = False
            self.stats.retries += 1
        plan.call.rate_limits_free = True  # a 429 paces the batch; it never uses up an item's retries
        probe = False
        try:
            gate = admission.gate
            if gate.resume_at and gate.paused:
                await admission.wait_out_pause()
            sent_at = admission.clock()
            probe = admission.probe_sent()
            outcome = await self._sender.attempt(plan.call)
        except asyncio.CancelledError:
            self.refund(item)
            admission.release()
            raise
        except Exception as exc:  # a sender that raised instead of answering: the item ends with it, never hangs
            admission.release()
            self._settle(item, None, sent=not isinstance(exc, ClientClosedError))
            error: BaseException = exc
            if isinstance(exc, ClientClosedError):  # nothing more can be sent: stop (resumable), not N failures
                self.stop_unfinished("the client was closed", exc)
                error = self.unfinished_error(exc)
            self._sink.finalize(item, None, error)
            return
        finally:
            if probe:
                admission.probe_answered()
        admission.release()
        try:
            exhausted = admission.learn(plan.call.response_headers)
            if exhausted is not None:  # "none remain until the reset", with no limit to pace at
                self._pause_or_stop(exhausted, "the server said no requests remain")
            delay = plan.after(outcome)
            if outcome.error is None:
                self._on_success(item, plan.result(), charge)
                return
            admission.refund_tokens(charge)
            # an error reply is not billed; a request whose reply never came may have been
            self._settle(item, None, sent=not isinstance(outcome.error, APIStatusError))
            self._on_error(item, outcome, delay, epoch, sent_at)
        except Exception as exc:  # e.g. a structured-output validator that raised: the item ends with it
            self._settle(item, None, sent=True)  # (a no-op once settled) no reservation may outlive its request
            self._sink.finalize(item, None, exc)

    def _on_success(self, item: BatchRequest, response: object, charge: int) -> None:
        self._outage.record(True)
        admission = self._admission
        admission.on_success()
        actual = self._sink.count_usage(response)
        if actual > 4 * item.est_tokens + 64:  # more than a guess could miss by: no more than it could use
            actual = self._cap_usage(item, actual)
        if actual and admission.tpm is not None:  # the estimate's correction matters only to a TPM bucket
            admission.estimator.observe(item.est_tokens, actual)
        admission.settle_tokens(charge, actual)
        if self.spend is not None:
            self._settle(item, response, sent=True)
        if self.cache is not None and item.cache_key is not None:  # a fallback's answer: under the fallback's key
            key = self.cache.answer_key(item.cache_key, item.plan.call if item.plan is not None else None)
            if key is not None:
                self._store(key, response)
        if item.steps is not None:
            parsed = self.planner.next_step(item, response)
            if parsed is None:
                return
            response = parsed
        self._sink.finalize(item, response, None)

    def _cap_usage(self, item: BatchRequest, actual: int) -> int:
        """A reply's total tokens, at most what its request could use (`possible_tokens`), so one absurd
        ``usage`` cannot put the TPM bucket hours into debt; logged once per batch."""
        request = item.request
        cap = possible_tokens(item.params if request is None else request, item.wire)  # this turn's, transcript too
        if actual <= cap:
            return actual
        if not self._usage_capped:
            self._usage_capped = True
            logger.warning("a reply reported usage of %d tokens, more than its request could use (%d); the rate "
                           "limiter counts %d", actual, cap, cap)
        return cap

    def _pause_or_stop(self, seconds: float, why: str) -> None:
        """Pause the whole batch for ``seconds``, or stop it (resumably) when that is longer than max_pause_s."""
        if seconds > self._options.max_pause_s:
            self.stop_unfinished(f"{why} for {seconds:.0f} s, longer than max_pause_s={self._options.max_pause_s:g}",
                                 None)
        else:
            self._admission.pause_for(seconds)

    def _on_error(self, item: BatchRequest, outcome: Outcome, delay: float | None, epoch: int,
                  sent_at: float) -> None:
        error = outcome.error
        assert error is not None and item.plan is not None
        stats = self.stats
        rate_limited = isinstance(error, APIStatusError) and error.status_code == 429 and not is_quota_exhausted(error)
        if rate_limited:  # the server asks us to slow down: pace the batch, not an outage, not the item's fault
            stats.rate_limited += 1
            self._outage.rate_limited(delay or 0.0)  # a run of 429s slows the batch; never an outage
            self._admission.on_rate_limited(epoch, sent_at)
        elif is_retryable(error):
            outage = self._outage.record(False)
            if outage is not None:
                self.stop_unfinished(outage, error)
            window = self._options.retry_window_s
            if delay is not None and window is not None and item.first_sent \
                    and time.perf_counter() - item.first_sent >= window:
                delay = None  # this item has failed for longer than retry_window_s: it ends with its error
        if delay is None:  # the client's decision: this item is finished
            self._on_final_error(item, error, item.plan.call.policy, rate_limited)
        elif self.abort is not None:
            self._sink.finalize(item, None, self.unfinished_error(error))
        elif rate_limited or (isinstance(error, APIStatusError) and error.retry_after is not None):
            item.retrying = True
            self._admission.pause_for(delay)  # the server asked for room: the whole batch waits
            self._queue.retry_now(item)
        else:
            item.retrying = True
            extra = self._admission.pace.wait_for()
            if extra:
                stats.retries_paced += 1
            self._queue.retry_later(item, delay + extra)

    def _on_final_error(self, item: BatchRequest, error: APIError, policy: RetryPolicy, rate_limited: bool) -> None:
        spec = item.plan.call.spec if item.plan is not None else None
        if spec is not None and spec.wire is not None and wire_of(spec).replan(error, spec):
            item.plan = None  # its format builds another request for it (the Responses API's bridge after a 404)
            item.retrying = True
            self._queue.retry_now(item)
            return
        if isinstance(error, AuthenticationError):
            self.stop(error, "authentication failed (HTTP 401)")
        elif is_quota_exhausted(error):
            self.stop(error, f"quota exhausted (HTTP {getattr(error, 'status_code', '?')})")
        retry_after = error.retry_after if isinstance(error, APIStatusError) else None
        if self.abort is None and retry_after is not None and retry_after > policy.max_retry_after \
                and is_retryable(error):
            # The server wants a longer pause than one call waits for: pause the whole batch (up to
            # max_pause_s) and send the item again, or stop the batch (resumable) when that is too long.
            if retry_after > self._options.max_pause_s:
                self.stop_unfinished(f"the server asked to wait {retry_after:.0f} s, longer than "
                                     f"max_pause_s={self._options.max_pause_s:g}", error)
            elif rate_limited or item.attempts <= policy.max_retries:
                item.retrying = True
                self._admission.pause_for(retry_after)
                item.plan = None  # a fresh plan (same idempotency key) once the pause is over
                self._queue.retry_now(item)
                return
        if self.abort is not None and self.abort is not error:
            self._sink.finalize(item, None, self.unfinished_error(error))
        else:
            self._sink.finalize(item, None, error)

    # ------------------------------------------------------------------ the response cache and the cost cap
    def answer_from_cache(self, item: BatchRequest) -> bool:
        """Look the item's next request up in the cache: True when that finished the item (a hit, or invalid
        parameters) or queued its next re-ask; False when it must be sent."""
        assert self.cache is not None
        plan = self.planner.plan(item)
        if plan is None:
            return True
        call = plan.call
        key = item.cache_key = self.cache.key_for(call.spec, call.config)
        response = (self.cache.get(key, clock=call.config.clock, wire=wire_of(call.spec))  # the call's clock
                    if key is not None else None)
        if response is None:
            return False
        if item.steps is not None:
            parsed = self.planner.next_step(item, response)
            if parsed is None:  # a re-ask was queued, or the item failed
                return True
            response = parsed
        self._sink.finalize_cached(item, response)
        return True

    def _store(self, key: str, response: object) -> None:
        assert self.cache is not None
        try:
            self.cache.put(key, response)
        except Exception as exc:  # a full disk or a locked file must not fail the item: it has its answer
            logger.warning("response cache: could not store a response: %s", exc)

    async def reserve(self, item: BatchRequest) -> bool:
        """Reserve the item's worst-case cost under the cap: True when it may be sent; False when it was
        finished instead (its model has no price, or the cap stopped the batch)."""
        spend = self.spend
        assert spend is not None
        plan = self.planner.plan(item)  # the request as it goes on the wire: every default and extra_body applied
        if plan is None:  # invalid parameters: the item is finished, nothing was sent
            return False
        body = plan.call.spec.body or {}
        wire = wire_of(plan.call.spec)
        need = spend.worst_case(body, wire)
        if need is None:
            model = body.get("model")
            self._sink.finalize(item, None, InvalidRequestError(
                f"no price for model {model!r}, and max_cost_usd needs one: pass prices={{{model!r}: "
                f"(input_per_m, output_per_m)}} (USD per million tokens) or --price {model}=IN,OUT. Not sent.",
                field="prices", reason="no price"))
            return False
        if not spend.unbounded_output and not output_token_bound(body, wire)[1]:
            spend.unbounded_output += 1  # said once per batch
            said = ("max_cost_usd: item %d sets no max_tokens: reserving %d output tokens for each such item, "
                    "an assumption (set max_tokens= to make the cap a hard bound)")  # in the format's own field
            limit = wire.output_limit_fields[0] if wire.output_limit_fields else "max_tokens"
            logger.warning(said.replace("max_tokens", limit), item.index, DEFAULT_OUTPUT_BOUND)
        assumed = assumption(body, wire)
        if not spend.try_reserve(need, assumed=assumed) and not await spend.reserve(need, assumed=assumed):
            self.stop_unfinished(spend.stop_reason(need), None)
            self._sink.finalize(item, None, self.unfinished_error(None))
            return False
        item.reserved, item.assumed = need, assumed
        return True

    def refund(self, item: BatchRequest) -> None:
        """Release the item's reservation: its request was not sent (or not billed)."""
        if item.reserved and self.spend is not None:
            self.spend.refund(item.reserved, item.assumed)
            item.reserved, item.assumed = 0.0, None

    def _settle(self, item: BatchRequest, response: object | None, *, sent: bool) -> None:
        """Count a request against the cap: a reply's usage at the batch's prices (or its reservation, when that
        is more or the usage cannot be true); a request that may have been billed but gave no usage counts its
        whole reservation; one that surely was not is refunded. A reply billed past the cap stops the batch."""
        spend, amount, assumed = self.spend, item.reserved, item.assumed
        if spend is None or not amount:
            return
        item.reserved, item.assumed = 0.0, None
        if not sent:
            spend.refund(amount, assumed)
            return
        cost = None
        wire = wire_of(item.plan.call.spec) if item.plan is not None else None
        usage = wire.usage(response) if wire is not None and response is not None else None
        if usage is not None and wire is not None and self._usage_true(item, response, wire, usage):
            model = str((item.request or item.params).get("model") or wire.model_of(response))
            cost = spend.pricer.cost(model, usage.input, usage.output, usage.cached)
            if cost is not None and cost > amount * (1 + 1e-9):  # a bound did not hold: the billed cost counts
                logger.warning("max_cost_usd: item %d was billed $%.6f, more than the $%.6f reserved for it (%d "
                               "input, %d output tokens: reasoning, an image/audio part or output beyond the "
                               "request's limits); the larger figure counts, and later reservations are scaled",
                               item.index, cost, amount, usage.input, usage.output)
        spend.settle(amount, cost, assumed)
        if spend.passed and self.abort is None:
            self.stop_unfinished(spend.stop_reason(0.0), None)

    def _usage_true(self, item: BatchRequest, response: object, wire: WireFormat, usage: TokenUsage) -> bool:
        """False for usage that cannot be true: negative tokens, or zero tokens on a non-empty answer. Such a
        reply counts its whole reservation (logged once). Usage above the reservation is believed: a server
        that bills more is charged in full (``SpendCap.settle``)."""
        answered = wire.has_answer(response)
        why = ("negative token counts" if min(usage.input, usage.output) < 0
               else "zero tokens for a non-empty answer" if answered and not (usage.input and usage.output)
               else None)
        if why is None:
            return True
        if not self._usage_doubted:
            self._usage_doubted = True
            logger.warning("max_cost_usd: item %d: the reply's usage cannot be true (%s): its whole reservation "
                           "counts (said once per batch)", item.index, why)
        return False

    def unfinished_error(self, last: BaseException | None) -> BaseException:
        """The error an item ends with because the batch stopped (``last``: its own last error, if any)."""
        abort = self.abort
        if isinstance(abort, BatchUnfinishedError):
            return BatchUnfinishedError(str(abort), stop_reason=abort.stop_reason, last_error=last)
        assert abort is not None
        return abort

    def stop_unfinished(self, reason: str, error: BaseException | None) -> None:
        """Stop for a reason that is not the items' fault: unfinished items end with
        ``BatchUnfinishedError`` (resumable)."""
        self.stop(BatchUnfinishedError(f"not finished: the batch stopped ({reason}); run it again later",
                                       stop_reason=reason, last_error=error), reason)

    def stop(self, error: BaseException, reason: str) -> None:
        """Stop the batch: nothing more is sent; every unfinished item ends with ``error``."""
        if self.abort is not None:
            return
        self.abort = error
        self.stats.stop_reason = reason
        if isinstance(error, BatchUnfinishedError):  # its message is the reason's own sentence
            logger.warning("batch stopped: %s; unfinished items can be run again", reason)
        else:
            logger.warning("batch stopped: %s: %s", reason, error)
        self._queue.end_backoffs()
        self._admission.stop()

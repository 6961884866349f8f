"""``CallMetrics``: the GenAI client metrics of holysheep's calls, and the cost counter (one owner for the
instruments, their attribute sets and the cost totals)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Observation

from holysheep._egress import scrub_json
from holysheep.integrations.otel._attributes import (
    ERROR_TYPE,
    OPERATION,
    PROVIDER,
    PROVIDER_NAME,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    SERVER_ADDRESS,
    SERVER_PORT,
    TOKEN_TYPE,
)

__all__ = ["COST_METRIC", "CallMetrics", "MetricKey"]

COST_METRIC = "holysheep.client.cost"
_DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
_CHUNK_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)

MetricKey = tuple[str, "str | None", "str | None", str, int, "str | None"]
"""(operation, request model, response model, server address, server port, error type)."""


def _histogram(meter: Any, name: str, unit: str, description: str, buckets: tuple[float, ...]) -> Any:
    try:
        return meter.create_histogram(name, unit=unit, description=description,
                                      explicit_bucket_boundaries_advisory=list(buckets))
    except TypeError:  # opentelemetry-api before 1.23 has no bucket advice
        return meter.create_histogram(name, unit=unit, description=description)


class CallMetrics:
    """The instruments on one meter: ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage`` (by
    ``gen_ai.token.type``), the two streaming histograms, and ``holysheep.client.cost`` (USD at the price
    catalog, summed here and read by the meter at collection: a dict update per call, not a measurement)."""

    def __init__(self, meter: Any) -> None:
        self._duration = _histogram(meter, "gen_ai.client.operation.duration", "s",
                                    "GenAI operation duration", _DURATION_BUCKETS)
        self._tokens = _histogram(meter, "gen_ai.client.token.usage", "{token}",
                                  "Number of input and output tokens used", _TOKEN_BUCKETS)
        self._ttfc = _histogram(meter, "gen_ai.client.operation.time_to_first_chunk", "s",
                                "Time to receive the first chunk of a streamed response", _DURATION_BUCKETS)
        self._tpoc = _histogram(meter, "gen_ai.client.operation.time_per_output_chunk", "s",
                                "Time between output chunks of a streamed response, after the first", _CHUNK_BUCKETS)
        self._cost_lock = threading.Lock()
        self._cost_totals: dict[MetricKey, list[Any]] = {}
        meter.create_observable_counter(COST_METRIC, callbacks=[self._observe_cost], unit="USD",
                                        description="Cost of the calls at the SDK's price catalog")
        self._attrs: dict[MetricKey, tuple[dict[str, object], dict[str, object], dict[str, object]]] = {}
        self._completion_cost: Callable[[str, int, int, int], float | None] | None = None

    def _observe_cost(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._cost_lock:
            return [Observation(total, attrs) for attrs, total in self._cost_totals.values()]

    def call_ended(self, key: MetricKey, elapsed: float, inp: int | None, out: int | None, cached: int) -> None:
        """Record one call: its duration, its input and output tokens, and its cost."""
        sets = self._attrs.get(key)
        if sets is None:
            sets = self._attrs_for(key)
        attrs = sets[0]
        self._duration.record(elapsed, attrs)
        if inp is not None:
            self._tokens.record(inp, sets[1])
        if out is not None:
            self._tokens.record(out, sets[2])
        model = key[2] or key[1]
        if model and (inp or out):
            price = self._completion_cost
            if price is None:
                from holysheep.pricing._cost import completion_cost  # the price catalog loads with the first usage

                price = self._completion_cost = completion_cost
            try:
                cost = price(model, inp or 0, out or 0, cached)
            except Exception:  # the price catalog is optional
                cost = None
            if cost:
                with self._cost_lock:
                    total = self._cost_totals.get(key)
                    if total is None:
                        self._cost_totals[key] = [attrs, cost]
                    else:
                        total[1] += cost

    def first_chunk(self, key: MetricKey, elapsed: float) -> None:
        """A stream's time to its first chunk."""
        self._ttfc.record(elapsed, self._plain(key))

    def per_chunk(self, key: MetricKey, gaps: list[float]) -> None:
        """A stream's time per output chunk: one value per chunk after the first (the time since the one before)."""
        attrs, record = self._plain(key), self._tpoc.record
        for seconds in gaps:
            record(seconds, attrs)

    def _plain(self, key: MetricKey) -> dict[str, Any]:
        sets = self._attrs.get(key)
        return (sets if sets is not None else self._attrs_for(key))[0]

    def _attrs_for(self, key: MetricKey) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
        """The metric attributes for ``key``: plain, and with ``gen_ai.token.type`` input / output (cached)."""
        op, request_model, response_model, host, port, error_type = key
        attrs: dict[str, object] = {OPERATION: op, PROVIDER_NAME: PROVIDER, SERVER_ADDRESS: host, SERVER_PORT: port}
        if request_model:
            attrs[REQUEST_MODEL] = request_model
        if response_model:
            attrs[RESPONSE_MODEL] = response_model
        if error_type:
            attrs[ERROR_TYPE] = error_type
        attrs = scrub_json(attrs)  # the egress scrubber: a model name a server glued a key into is masked
        if len(self._attrs) > 1000:  # a bounded cache: models and hosts are few
            self._attrs.clear()
        sets = self._attrs[key] = (attrs, {**attrs, TOKEN_TYPE: "input"}, {**attrs, TOKEN_TYPE: "output"})
        return sets

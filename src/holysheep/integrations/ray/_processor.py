"""`build_processor`: a callable that turns a Ray dataset of prompts into a lazy dataset of answers."""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from holysheep._exceptions import InvalidRequestError
from holysheep.integrations.ray._config import ReplicaConfig, Secret
from holysheep.integrations.ray._rows import RowSpec

if TYPE_CHECKING:
    import ray.data

__all__ = ["Processor", "build_processor"]

_BURST_S = 0.5
_BATCH_OPTION_NAMES = ("retry_budget", "adaptive", "outage_after_s", "outage_failure_ratio", "outage_window",
                       "max_pause_s", "gc_threshold")
_CLIENT_OPTION_NAMES = ("initial_retry_delay", "max_retry_delay", "max_retry_after")


class Processor:
    """Call it on a `ray.data.Dataset` to get the lazy dataset of results (see `build_processor`)."""

    def __init__(self, config: ReplicaConfig, *, replicas: int, num_cpus: float, batch_size: int,
                 rpm: float | None, tpm: float | None, skip_done: object = None) -> None:
        self.config = config
        self.replicas, self.num_cpus, self.batch_size = replicas, num_cpus, batch_size
        self.rpm, self.tpm = rpm, tpm
        self.skip_done = skip_done
        self.limiter: object = None
        """The named limiter actor's handle, once the processor has been called (a detached actor that
        ends itself after 10 idle minutes, so a lazy dataset outlives this object safely)."""

    def __call__(self, ds: ray.data.Dataset) -> ray.data.Dataset:
        """A lazy dataset: `ds`'s rows (less those `skip_done` finds done), each with the answer columns."""
        import ray

        from holysheep.integrations.ray._actors import limiter_actor
        from holysheep.integrations.ray._replica import Replica

        if not ray.is_initialized():
            ray.init(ignore_reinit_error=True, include_dashboard=False)
        if self.skip_done is not None:
            from holysheep.integrations.ray._skip import drop_done

            ds = drop_done(ds, self.skip_done, self.config.rows)
        assert self.config.limiter_name is not None
        self.limiter = limiter_actor(self.config.limiter_name, rpm=self.rpm, tpm=self.tpm,
                                     namespace=self.config.limiter_namespace, burst_s=_BURST_S)
        return ds.map_batches(Replica, fn_constructor_kwargs={"config": self.config}, concurrency=self.replicas,
                              num_cpus=self.num_cpus, batch_size=self.batch_size, batch_format="pyarrow",
                              zero_copy_batch=False)

    def __repr__(self) -> str:
        return (f"<holysheep.integrations.ray.Processor model={self.config.rows.params.get('model')!r} "
                f"replicas={self.replicas} concurrency_per_replica={self.config.concurrency} "
                f"rpm={self.rpm} tpm={self.tpm}>")


def _positive(name: str, value: object, *, integer: bool = False) -> None:
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
    if bad or (integer and not isinstance(value, int)):
        kind = "an integer >= 1" if integer else "a number > 0"
        raise InvalidRequestError(f"{name} must be {kind}, got {value!r}.", field=name)


def build_processor(
    *,
    model: str | None,
    replicas: int = 4,
    concurrency_per_replica: int = 32,
    rpm: float | None = None,
    tpm: float | None = None,
    prompt_column: str | None = "prompt",
    messages_column: str | None = None,
    id_column: str = "custom_id",
    skip_done: object = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
    max_retries: int = 5,
    fallbacks: Sequence[object] | None = None,
    num_cpus_per_replica: float = 0.125,
    batch_size: int | None = None,
    limiter_name: str | None = None,
    _whole_row: bool = False,
    **params: Any,
) -> Processor:
    """Build a processor that answers every row of a Ray dataset with a chat completion.

    ```python
    processor = build_processor(model="deepseek-v3.2", replicas=8, rpm=10_000, prompt_column="prompt",
                                max_tokens=256)
    out = processor(ray.data.read_parquet("prompts/"))   # lazy
    ```

    - `replicas` actors (each asks for `num_cpus_per_replica` CPUs: they wait on the network) run the SDK's
      async batch engine on their blocks with `concurrency_per_replica` requests in flight.
    - `rpm`/`tpm` are one limit for the whole cluster, held in a named Ray actor (`limiter_name`, default a
      fresh name) that replicas lease permits from; a 429 anywhere pauses every replica for its Retry-After.
    - The request is the `prompt_column` (a string) or `messages_column` (a list of messages); any other
      keyword (`max_tokens`, `temperature`, ...) goes to `create()` for every row.
    - Output: the input columns plus `response`, `finish_reason`, `prompt_tokens`, `completion_tokens`,
      `cost_usd`, `error`, `error_type`, `attempts`, `latency_s`, `served_by`; one row per input row. A
      failed row has `error` set; a rejected key (401) stops the job with `AuthenticationError`.
    - `skip_done`: a path (Parquet or JSON Lines) or dataset of earlier results; rows whose `id_column`
      (or, without one, the request's hash) already succeeded there are not sent again.
    - `api_key`, `base_url`, `timeout`, `fallbacks` are the client settings; unset ones come from the
      environment (`HOLYSHEEP_API_KEY`, `HOLYSHEEP_BASE_URL`) of the process that builds the processor.
      `max_retries` is the retry limit per row; `initial_retry_delay`, `max_retry_delay` and
      `max_retry_after` are client settings too. Batch options (`retry_budget`, `adaptive`,
      `outage_after_s`, `max_pause_s`, ...) pass through to each replica's batch engine.
    - Server-announced limits (`x-ratelimit-limit-requests` / `-tokens`) are learned by the cluster
      limiter: they lower `rpm`/`tpm` (or set them when unset) for every replica.
    """
    from holysheep import Client

    _positive("replicas", replicas, integer=True)
    _positive("concurrency_per_replica", concurrency_per_replica, integer=True)
    _positive("num_cpus_per_replica", num_cpus_per_replica)
    for name, value in (("rpm", rpm), ("tpm", tpm)):
        if value is not None:
            _positive(name, value)
    if not _whole_row and (not isinstance(model, str) or not model):
        raise InvalidRequestError(f"model must be a non-empty string, got {model!r}.", field="model")
    if messages_column is None and prompt_column is None and not _whole_row:
        raise InvalidRequestError("set prompt_column= or messages_column=.", field="prompt_column")
    if params.get("stream"):
        raise InvalidRequestError("stream=True is not supported by a processor.", field="stream")
    batch_options = {k: params.pop(k) for k in _BATCH_OPTION_NAMES if k in params}
    client_options = {k: params.pop(k) for k in _CLIENT_OPTION_NAMES if k in params}
    api_key = api_key if api_key is not None else os.environ.get("HOLYSHEEP_API_KEY")
    base_url = base_url if base_url is not None else os.environ.get("HOLYSHEEP_BASE_URL")
    Client(api_key=api_key, base_url=base_url, max_retries=max_retries,  # typed errors now, before any I/O
           **client_options).close()
    if batch_size is None:
        batch_size = 4 * concurrency_per_replica
    if rpm:
        chunk = max(1, min(concurrency_per_replica, math.floor(rpm / 60 * _BURST_S / replicas)))
    else:
        chunk = concurrency_per_replica
    token_chunk = math.floor(tpm / 60 * _BURST_S / (2 * replicas)) if tpm else 0
    shared = {**({"model": model} if model else {}), **params}
    rows = RowSpec(prompt_column=None if messages_column is not None else prompt_column,
                   messages_column=messages_column, id_column=id_column, params=shared, whole_row=_whole_row)
    config = ReplicaConfig(
        api_key=Secret(api_key), base_url=base_url, timeout=timeout, max_retries=max_retries,
        fallbacks=fallbacks, rows=rows, concurrency=concurrency_per_replica, batch_options=batch_options,
        client_options=client_options,
        limiter_name=limiter_name or f"holysheep-limiter-{uuid.uuid4().hex[:12]}", chunk=chunk,
        token_chunk=token_chunk, limit_tokens=tpm is not None, rpm=rpm, tpm=tpm, burst_s=_BURST_S)
    return Processor(config, replicas=replicas, num_cpus=num_cpus_per_replica, batch_size=batch_size, rpm=rpm,
                     tpm=tpm, skip_done=skip_done)

"""``BatchParams``: the keyword arguments of ``chat.completions.batch`` / ``batch_iter``, defined once.

It lives beside the clients (which type their ``batch`` methods with it) so that the batch engine,
which sits above the clients, imports it and not the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Union

from holysheep._core.request import ChatParamsBase, ResponseFormatInput, ToolInput

__all__ = ["BATCH_OPTION_NAMES", "DEFAULT_CONCURRENCY", "DEFAULT_RETRY_WINDOW_S", "BatchParams", "BatchResponseFormat",
           "HOOK_NAMES"]

DEFAULT_CONCURRENCY: Final = 16
"""Requests in flight at most, by default: ``BatchOptions``, ``run_jsonl`` and ``holysheep batch`` read it."""
DEFAULT_RETRY_WINDOW_S: Final = 600.0
"""How long an item's transient failures may go on before it ends with its last error, by default."""

BatchResponseFormat = ResponseFormatInput  # Mapping[str, Any] | type[Any], as create() and run_tools() take it
"""``response_format`` as ``batch()`` takes it at run time (as ``parse`` does): a mapping (a ``json_schema`` /
``json_object`` envelope, sent as given unless ``max_repairs`` is set, or a bare JSON schema), a pydantic
model, or another type pydantic understands (``list[Model]``, a ``TypedDict`` class); a schema or a type
gives each result ``parsed``. ``Literal[...]`` and ``X | Y`` work too, but a type checker does not see them
as types: wrap them in a model or a ``list[...]``."""


class BatchParams(ChatParamsBase, total=False):
    """Batch options, plus ``create()`` defaults applied to every item (``model``, ``max_tokens``, ...).

    - ``model``: default model for items that do not name one.
    - ``tools``: tool dicts, and also plain or async functions and pydantic models (made strict tools with
      ``function_tool`` / ``pydantic_function_tool``), unlike ``create()``, which sends dicts as given.
    - ``response_format``: a dict (or any mapping), a pydantic model, or another type pydantic understands
      (``list[Model]``); a model, a type or a bare JSON schema gives each result ``parsed``.
    - ``max_repairs``: with ``response_format=Model``, re-ask up to this many times when a reply does not
      validate (default 0); each result then has ``parsed``.
    - ``max_turns``: with ``tools=[functions]`` (or tools with a handler), each item runs a tool loop of up
      to this many requests (default 10), every request admitted like any other; each result then has
      ``tool_run`` (transcript, tool calls, usage). ``tools=[pydantic_function_tool(Model)]`` without
      handlers gives each result ``tool_calls[i].function.parsed_arguments`` instead.
    - ``tool_timeout``: seconds one tool call of an agent may run (default 60; None: no limit); past it the
      model gets an error text and the call is left to finish on its own. Tools run in the client's own
      threads (``tool_threads``), never the event loop's default executor.
    - ``concurrency``: most requests in flight (default 16).
    - ``rpm`` / ``tpm``: requests / estimated tokens per minute; ``"auto"`` (the default) follows the
      limits the server announces in ``x-ratelimit-*`` headers (no pacing while it sends none); None
      turns pacing off.
    - ``max_retries``: retries per item for transient failures (5xx, connection errors, timeouts). Default:
      the batch's own policy, not the client's: retried until the item succeeds, ``retry_window_s`` passes,
      or the batch stops on an outage. A 429 never counts: it slows the whole batch instead.
    - ``retry_window_s``: an item whose transient failures go on this long after its first attempt ends
      with its last error (default 600 s; None: no limit). 429s never end an item.
    - ``retry_budget``: share of extra requests retries may add before they are paced (default 0.2;
      None: no pacing). Retries over the share wait their turn; they are never refused.
    - ``adaptive``: halve concurrency on a 429 and grow it back (AIMD; default True).
    - ``outage_after_s``: stop when nothing succeeded for this long (default 60 s).
    - ``outage_failure_ratio``: stop when this share of the last ``outage_window`` attempts failed
      (default 0.9 of 100; 429s are not counted). Unfinished items then end with ``BatchUnfinishedError``.
    - ``max_pause_s``: longest batch-wide pause for a server's ``Retry-After`` (default 300 s); a longer
      one stops the batch (resumable).
    - ``read_ahead``: inputs read ahead of dispatch (default ``max(2 * concurrency + 64, 128)``).
    - ``check_quota`` / ``require_quota``: check the quota first; warn (or refuse) when short.
    - ``gc_threshold``: while the batch sends, Python's garbage collector runs its young generation only
      every this many new objects (default 10,000; CPython's own is 700). A batch keeps every result,
      and the default made collections cost about a sixth of the wall time at 256 in flight. Only ever
      raised, shared by concurrent batches, and put back when the last one ends; None leaves it alone.
    - ``max_cost_usd``: stop before the spend could pass this many USD (never overshoots: each request's
      worst case is reserved before it is sent; see ``docs/spend.md``). Unsent items end with
      ``BatchUnfinishedError`` (resumable). Needs a price for every model.
    - ``prices``: ``{model: (input_per_m, output_per_m)}`` in USD per million tokens, for models the price
      catalog lacks (or to override it) in the cap and the stats' cost.
    - ``cache``: a response cache (a file path, a ``holysheep.cache.CacheStore`` or ``ResponseCache``):
      a repeated request is answered from it without a request (``response.cached``); default: the
      client's ``cache=``.
    - ``idempotency_seed``: a string naming this run's input (say a path). Each item with a ``custom_id``
      then sends the ``Idempotency-Key`` derived from it, its ``custom_id`` and its parameters, the same in
      every run, so a re-run of an interrupted item reuses its key (``run_jsonl`` seeds it with the output
      file). Default None: a new key per item.
    - ``progress``: True, ``"plain"``, ``"rich"`` or a reporter object.
    - ``on_result`` / ``on_progress``: callbacks per finished item / per update.
    """

    model: str
    tools: Sequence[ToolInput]
    response_format: BatchResponseFormat
    max_repairs: int
    max_turns: int
    tool_timeout: Union[float, None]
    concurrency: int
    rpm: Union[float, Literal["auto"], None]
    tpm: Union[float, Literal["auto"], None]
    retry_budget: Union[float, None]
    adaptive: bool
    outage_after_s: float
    outage_failure_ratio: float
    outage_window: int
    max_pause_s: float
    retry_window_s: Union[float, None]
    read_ahead: Union[int, None]
    check_quota: bool
    require_quota: bool
    gc_threshold: Union[int, None]
    max_cost_usd: Union[float, None]
    prices: Union[Mapping[str, object], None]
    cache: object
    idempotency_seed: Union[str, None]
    progress: object
    on_result: Union[Callable[[Any], None], None]
    on_progress: Union[Callable[[Any], None], None]


HOOK_NAMES = frozenset({"progress", "on_result", "on_progress"})
"""Batch options that are callbacks or reporters (not part of ``BatchOptions``)."""
BATCH_OPTION_NAMES = frozenset({
    "concurrency", "rpm", "tpm", "retry_budget", "adaptive", "outage_after_s", "outage_failure_ratio",
    "outage_window", "max_pause_s", "retry_window_s", "read_ahead", "check_quota", "require_quota", "gc_threshold",
    "max_cost_usd", "prices", "cache", "idempotency_seed",
})
"""Batch options that configure the engine (everything else is a ``create()`` default)."""

"""JSONL batches: read requests lazily from a file, write one result line per input, resume.

Input lines: OpenAI Batch API (`{"custom_id", "method", "url", "body"}`) or `{"custom_id", "messages",
...create params}`; a line without `custom_id` is called `line-N`. Output lines:
`{"custom_id", "request_hash", "response": {...}}` or `{"custom_id", "request_hash", "error": {"type",
"status_code", "message"}}`. They are appended as results complete; at the end the file is compacted
atomically to exactly one line per `custom_id`, in input order (see `_jsonl_output`).

`resume=True` skips lines whose last result succeeded and runs the rest again (failures included).
It refuses (`OutputMismatchError`) an output whose lines were written for a different input.
Items the batch did not finish because it stopped (outage, quota, 401, Ctrl-C) get no line, so the
next `--resume` runs them. The async runner uses the engine through `aclient.chat.completions.batch_iter`;
the sync one through `_stream_sync` (see there why).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pydantic_core import to_json

from holysheep._core.batch_params import BATCH_OPTION_NAMES, DEFAULT_CONCURRENCY, HOOK_NAMES
from holysheep._core.log import get_logger
from holysheep._egress import scrub
from holysheep._engine.progress import make_progress, with_total
from holysheep._engine.results import BatchResult, BatchSummary
from holysheep._engine.run import with_client_cache
from holysheep._engine.spend import check_max_cost, check_priced
from holysheep._engine.unfinished import is_unfinished
from holysheep._exceptions import APIError, InvalidRequestError
from holysheep.batch._jsonl_input import InputLine, check_cache_path, check_paths, read_lines, scan_input
from holysheep.batch._jsonl_output import (
    OutputLock,
    OutputWriteError,
    PriorResult,
    compact_output,
    empty_output,
    read_output,
)
from holysheep.batch._jsonl_report import MAX_ERRORS, JsonlReport
from holysheep.batch._openai_output import check_format
from holysheep.batch._openai_output import error_line as openai_error_line
from holysheep.batch._openai_output import success_line as openai_success_line
from holysheep.batch._output_files import OutputPathError, check_beside, output_target, regular_opener

if TYPE_CHECKING:
    from holysheep._clients.async_client import AsyncClient
    from holysheep._clients.client import Client

__all__ = ["JsonlReport", "arun_jsonl", "error_record", "run_jsonl"]

logger = get_logger("holysheep.batch")

PathLike = str | os.PathLike[str]

_TYPES = {
    "InvalidRequestError": "invalid_request_error",
    "APIConnectionError": "connection_error",
    "APITimeoutError": "timeout",
    "APIResponseValidationError": "invalid_response",
    "BatchCancelledError": "cancelled",
}


def error_record(error: BaseException) -> dict[str, Any]:
    """`{"type", "status_code", "message", "error_class"}` for an error (`type` is the API's when it sent one)."""
    name = type(error).__name__
    kind = error.type if isinstance(error, APIError) and error.type else _TYPES.get(name, name)
    status = getattr(error, "status_code", None)
    return {"type": kind, "status_code": status if isinstance(status, int) else None,
            "message": str(error), "error_class": name}


@dataclass
class _Plan:
    src: Path
    dst: Path
    report: JsonlReport
    order: list[str]
    prior: dict[str, PriorResult]
    to_send: int
    tokens: int
    lock: OutputLock
    size: int  # the input's size when the run started: only those bytes are read
    drop: set[str]  # failed results of custom_ids the input no longer has (a bad line since fixed): removed


def _prepare(input_path: PathLike, output_path: PathLike, resume: bool, overwrite: bool,
             defaults: Mapping[str, object], output_format: str = "holysheep", cache: object = None,
             rerun_changed: bool = False) -> _Plan:
    src, dst = Path(input_path), Path(output_path)
    if rerun_changed and not resume:
        raise InvalidRequestError("rerun_changed=True (--rerun-changed) needs resume=True (--resume): it sends again "
                                  "the lines changed since their results were written.", field="rerun_changed")
    check_paths(src, dst)
    named, dst = dst, output_target(dst)  # a regular file or a new path (links resolved), before anything is sent
    check_cache_path(cache, dst)
    if dst.exists() and dst.stat().st_size > 0 and not (resume or overwrite):
        raise InvalidRequestError(f"output file {named} already has results: pass resume=True (--resume) to "
                                  "continue it, or overwrite=True (--overwrite) to start again.", field="output_path")
    lock = OutputLock(dst)  # on the file itself: every name of it takes this one lock
    lock.acquire()
    try:
        check_beside(dst.with_name(dst.name + ".tmp"))
        report = JsonlReport(str(src), str(named))
        prior = read_output(dst, output_format) if resume else {}
        size = src.stat().st_size  # the run reads what the input holds now: lines appended later are not sent
        order, to_send, tokens = scan_input(src, dst, prior, defaults, report, size, rerun_changed)
        if overwrite and not resume and dst.exists():
            empty_output(dst)
    except BaseException:
        lock.release()
        raise
    seen = set(order)
    drop = {cid for cid, before in prior.items() if not before.ok and cid not in seen}
    return _Plan(src, dst, report, order, prior, to_send, tokens, lock, size, drop)


class _Writer:
    """Writes result lines (from the engine, and for bad lines) and keeps the report's counts."""

    def __init__(self, out: TextIO, report: JsonlReport, on_result: Callable[[BatchResult], None] | None,
                 output_format: str = "holysheep") -> None:
        self.out, self.report, self.on_result = out, report, on_result
        self.openai = output_format == "openai"
        self.digests: dict[str, str] = {}
        self._lock = threading.Lock()

    def _line(self, line: str) -> None:
        with self._lock:
            try:
                self.out.write(line)
                self.out.flush()
            except OSError as exc:  # a full disk: say where, and that --resume continues
                raise OutputWriteError(
                    f"could not write results to {self.out.name}: {exc.strerror or exc}. The lines written before are "
                    "intact; free space (or fix the disk) and run again with --resume to continue.") from None

    def _write(self, cid: str, digest: str | None, body: str) -> None:
        """A line: the head (the caller's ``custom_id``, which ``--resume`` matches) as it is, the rest through
        the egress scrubber (a key the server or a tool echoed is masked, whatever field holds it)."""
        self._line('{"custom_id":' + json.dumps(cid) + ',"request_hash":' + json.dumps(digest) + scrub(body) + "}\n")

    def _error(self, cid: str, digest: str | None, error: BaseException) -> None:
        record = error_record(error)
        if self.openai:
            self._line(openai_error_line(cid, digest, error, record["type"]))
        else:
            self._write(cid, digest, ',"error":' + json.dumps(record))

    def bad_line(self, line: InputLine) -> None:
        assert line.problem is not None
        error = InvalidRequestError(f"line {line.lineno}: {line.problem}", field="line")
        self.report.bad_lines.append((line.lineno, line.problem))
        self.report.failed += 1
        self._error(line.custom_id, line.digest, error)

    def __call__(self, result: BatchResult) -> None:
        cid = result.custom_id or ""
        digest = self.digests.pop(cid, None)
        if result.response is not None:
            parsed = result.parsed
            body = result.response.model_dump_json()
            if self.openai:
                self._line(openai_success_line(cid, digest, result.response.request_id, body))
            else:
                tail = "" if parsed is None else ',"parsed":' + to_json(parsed).decode()
                run = result.tool_run
                if run is not None:  # an agent item: its transcript and tool calls ride on the line
                    tail += (',"transcript":' + to_json(run.messages).decode() + ',"tool_calls":'
                             + to_json([record.to_dict() for record in run.tool_calls]).decode())
                self._write(cid, digest, ',"response":' + body + tail)
            self.report.succeeded += 1
        elif is_unfinished(result):
            self.report.not_run += 1  # the batch stopped before finishing it: leave it for --resume
            return
        else:
            assert result.error is not None
            if len(self.report.errors) < MAX_ERRORS:  # (bad lines are in bad_lines)
                self.report.errors.append((cid, str(result.error)))
            self._error(cid, digest, result.error)
            self.report.failed += 1
        if self.on_result is not None:
            self.on_result(result)


def _items(plan: _Plan, writer: _Writer, defaults: Mapping[str, object]) -> Iterator[dict[str, object]]:
    """The lines to send, as dicts for the engine; counts re-runs and writes bad lines as it goes."""
    report = plan.report
    for line in read_lines(plan.src, defaults, plan.size):
        before = plan.prior.get(line.custom_id)
        if before is not None:
            if before.ok:
                continue  # counted as skipped by the scan
            report.rerun += 1
        if line.item is None:
            writer.bad_line(line)
            continue
        writer.digests[line.custom_id] = line.digest
        yield line.item


def _split(kwargs: dict[str, object]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(batch options, create() defaults): `BatchParams`' engine options, and the rest but the hooks."""
    options = {k: v for k, v in kwargs.items() if k in BATCH_OPTION_NAMES}
    defaults = {k: v for k, v in kwargs.items()
                if k not in BATCH_OPTION_NAMES and k not in HOOK_NAMES and v is not None}
    return options, defaults


def _seed(output_path: PathLike) -> str:
    """The idempotency seed of a JSONL run: the output file's identity (its absolute path), so each line's
    key is the same in every run that writes this file (`stable_key`: with its custom_id and request)."""
    return "jsonl:" + str(Path(output_path).resolve())


def _check_cap(input_path: PathLike, options: Mapping[str, Any], defaults: Mapping[str, object]) -> None:
    """With ``max_cost_usd``: the cap is valid and every model of the file has a price, before anything is
    written or sent (one extra read of the input)."""
    if options.get("max_cost_usd") is None:
        return
    check_max_cost(options["max_cost_usd"])
    src = Path(input_path)
    if src.is_file():
        check_priced({str(line.item["model"]) for line in read_lines(src, defaults)
                      if line.item is not None and line.item.get("model")}, options.get("prices"))


@contextlib.contextmanager
def _output(path: Path) -> Iterator[TextIO]:
    """The output, open for appending. Closing it flushes what a full disk refused: that failure must not
    hide the `OutputWriteError` already raised, and alone it becomes one."""
    out = open(path, "a", encoding="utf-8", newline="\n", opener=regular_opener())  # noqa: SIM115 - closed below
    try:
        yield out
    except BaseException:
        with contextlib.suppress(OSError):
            out.close()
        raise
    try:
        out.close()
    except OSError as exc:
        raise OutputWriteError(f"could not write results to {path}: {exc.strerror or exc}. The lines written "
                               "before are intact; free space and run again with --resume to continue.") from None


def _finish(plan: _Plan, ok: bool) -> None:
    """Compact the output to one line per custom_id and release the lock. After an error or Ctrl-C the
    compaction is still tried, but its own failure must not hide the first one (the next `--resume`
    compacts anyway). `not_run` is every line left without a result this run, whether the engine
    reported it unfinished or stopped before reading it."""
    report = plan.report
    report.not_run = max(report.not_run, report.lines - report.skipped - report.succeeded - report.failed)
    try:
        if ok:
            try:
                compact_output(plan.dst, plan.order, plan.drop)
            except (OSError, OutputPathError) as exc:  # the results fit but their copy did not: kept as appended
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                report.compaction_error = (
                    f"could not rewrite {plan.dst} to one line per custom_id ({why}); the results are "
                    "intact as appended (the last line of each custom_id counts) and the next --resume rewrites it")
                logger.warning("%s", report.compaction_error)
        else:
            with contextlib.suppress(Exception):
                compact_output(plan.dst, plan.order, plan.drop)
    finally:
        plan.lock.release()


def _stream_sync(client: Client, items: Iterator[dict[str, object]], options: dict[str, object], *, progress: object,
                 on_result: Callable[[BatchResult], None], on_progress: object, total: int,
                 estimated_tokens: int) -> BatchSummary:
    """Run the engine for the sync client with results delivered one by one.

    The one place this module reaches below the public batch API: the sync client's `batch()` keeps
    every result in memory, which a 100,000-line file must not do, so this drives the engine the way
    `batch()` does (a private event loop in a worker thread) but keeps nothing. Ctrl-C raises
    `KeyboardInterrupt` after the lines already finished are written.
    """
    from holysheep._engine.private_loop import run_in_private_loop
    from holysheep._engine.run import iterator_for

    concurrency = options.get("concurrency", DEFAULT_CONCURRENCY)
    params = {**options, "progress": progress, "on_result": on_result, "on_progress": on_progress}

    async def main() -> BatchSummary:
        sender = client.batch_sender(concurrency if isinstance(concurrency, int) else DEFAULT_CONCURRENCY)
        try:
            it = iterator_for(sender, items, params, total=total, estimated_tokens=estimated_tokens)
            async with it:
                async for _ in it:
                    pass
            return BatchSummary.from_stats(it.stats, it.stats.done)
        finally:
            await sender.aclose()

    return run_in_private_loop(main)


def run_jsonl(client: Client, input_path: PathLike, output_path: PathLike, *, model: str | None = None,
              concurrency: int = DEFAULT_CONCURRENCY, rpm: float | Literal["auto"] | None = "auto",
              tpm: float | Literal["auto"] | None = "auto", max_retries: int | None = None, resume: bool = False,
              overwrite: bool = False, progress: object = False, output_format: str = "holysheep",
              rerun_changed: bool = False, **kwargs: Any) -> JsonlReport:
    """Run every request of a JSONL file and write one result line per input to `output_path`.

    Duplicate custom_ids are rejected before anything is sent; a malformed line becomes an error line
    naming its line number and does not stop the others. `resume=True` skips lines whose last result
    succeeded and runs the others again (failures too); it raises `OutputMismatchError` when a line changed
    since its successful result was written, unless `rerun_changed=True` (then such lines are sent again and
    their old results replaced), and when the output holds custom_ids the input lacks. `--resume` continues
    only a results file in ``output_format`` (`OutputNotResultsError`). The output may not be the input
    file nor the cache file, and a lock file (`OUTPUT.lock`) keeps a second run from writing it at the same
    time (`OutputLockedError`). At the
    end the output holds exactly one line per finished custom_id, in input order. Other keyword
    arguments are those of `client.chat.completions.batch` (`max_tokens`, `max_retries`, ...).
    Memory stays flat: results are written as they complete and not kept.
    """
    kwargs.update(model=model, concurrency=concurrency, rpm=rpm, tpm=tpm, max_retries=max_retries)
    check_format(output_format)
    options, defaults = _split(kwargs)
    _check_cap(input_path, options, defaults)
    options = dict(with_client_cache(options, client.cache))
    options.setdefault("idempotency_seed", _seed(output_path))
    plan = _prepare(input_path, output_path, resume, overwrite, defaults, output_format, options.get("cache"),
                    rerun_changed)
    try:
        with _output(plan.dst) as out:
            writer = _Writer(out, plan.report, kwargs.get("on_result"), output_format)
            plan.report.summary = _stream_sync(
                client, _items(plan, writer, defaults), options, progress=progress, on_result=writer,
                on_progress=kwargs.get("on_progress"), total=plan.to_send, estimated_tokens=plan.tokens)
    except BaseException:
        _finish(plan, ok=False)
        raise
    _finish(plan, ok=True)
    return plan.report


async def arun_jsonl(client: AsyncClient, input_path: PathLike, output_path: PathLike, *, resume: bool = False,
                     overwrite: bool = False, output_format: str = "holysheep", rerun_changed: bool = False,
                     **kwargs: Any) -> JsonlReport:
    """Async `run_jsonl` for an `AsyncClient` (same arguments and defaults)."""
    check_format(output_format)
    options, defaults = _split(kwargs)
    _check_cap(input_path, options, defaults)
    options.setdefault("idempotency_seed", _seed(output_path))
    plan = _prepare(input_path, output_path, resume, overwrite, defaults, output_format,
                    options.get("cache") or client.cache, rerun_changed)
    try:
        progress = make_progress(kwargs.get("progress", False))
        with _output(plan.dst) as out:
            writer = _Writer(out, plan.report, kwargs.get("on_result"), output_format)
            it = client.chat.completions.batch_iter(
                _items(plan, writer, defaults), on_progress=kwargs.get("on_progress"),
                progress=with_total(progress, plan.to_send) if progress is not None else False, **options)
            async with it:
                async for result in it:
                    writer(result)
        plan.report.summary = BatchSummary.from_stats(it.stats, it.stats.done)
    except BaseException:
        _finish(plan, ok=False)
        raise
    _finish(plan, ok=True)
    return plan.report

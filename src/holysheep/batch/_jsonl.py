"""JSONL batches: read requests lazily from a file, append one result line per input as it completes, resume.

Input lines: OpenAI Batch API (``{"custom_id", "method", "url", "body"}``) or ``{"custom_id", "messages",
...create params}``; a line without ``custom_id`` is called ``line-N``. Output lines:
``{"custom_id", "response": {...}}`` or ``{"custom_id", "error": {"type", "status_code", "message"}}``,
appended and flushed one by one, in completion order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._exceptions import APIError, APIStatusError, InvalidRequestError
from ._requests import BatchRequest, estimate_tokens, normalize_item
from ._results import BatchResult, BatchSummary
from ._runner import BatchIterator, QuotaFn, Send, client_sender
from ._sync import run_in_private_loop, sync_backend

if TYPE_CHECKING:
    from .._async_client import AsyncClient
    from .._client import Client

__all__ = ["JsonlReport", "arun_jsonl", "error_record", "read_done_ids", "run_jsonl"]

PathLike = str | os.PathLike[str]

_TYPES = {
    "InvalidRequestError": "invalid_request_error",
    "APIConnectionError": "connection_error",
    "APITimeoutError": "timeout",
    "APIResponseValidationError": "invalid_response",
    "BatchCancelledError": "cancelled",
}


@dataclass
class JsonlReport:
    """What a JSONL run did. ``bad_lines`` are ``(line number, message)``; ``not_run`` counts items left
    unsent (and unwritten) because the batch stopped (401 or quota): ``--resume`` runs them later."""

    input_path: str
    output_path: str
    lines: int = 0
    skipped: int = 0
    succeeded: int = 0
    failed: int = 0
    not_run: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    summary: BatchSummary | None = None

    @property
    def ok(self) -> bool:
        """True when every line ran (or was already done) and succeeded."""
        return self.failed == 0 and self.not_run == 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return asdict(self)


def error_record(error: BaseException) -> dict[str, Any]:
    """``{"type", "status_code", "message"}`` for an error (``type`` is the API's when it sent one)."""
    name = type(error).__name__
    kind = error.type if isinstance(error, APIError) and error.type else _TYPES.get(name, name)
    status = getattr(error, "status_code", None)
    return {"type": kind, "status_code": status if isinstance(status, int) else None,
            "message": str(error), "error_class": name}


def _line_id(obj: Any, lineno: int) -> str:
    cid = obj.get("custom_id") if isinstance(obj, dict) else None
    if cid is None:
        return f"line-{lineno}"
    return cid if isinstance(cid, str) else json.dumps(cid)


def _scan(path: Path, defaults: Mapping[str, Any]) -> tuple[int, int]:
    """Check custom_ids are unique (raising before any request otherwise); return (lines, estimated tokens)."""
    seen: dict[str, int] = {}
    dupes: dict[str, list[int]] = {}
    lines = tokens = 0
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            lines += 1
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            cid = _line_id(obj, lineno)
            first = seen.setdefault(cid, lineno)
            if first != lineno:
                dupes.setdefault(cid, [first]).append(lineno)
            if isinstance(obj, dict):
                body = obj.get("body")
                params = body if isinstance(body, dict) else obj
                tokens += estimate_tokens({**defaults, **params} if defaults else params)
    if dupes:
        shown = "; ".join(f"{cid!r} on lines {', '.join(map(str, ls))}" for cid, ls in list(dupes.items())[:5])
        more = f" and {len(dupes) - 5} more" if len(dupes) > 5 else ""
        raise InvalidRequestError(f"{path}: duplicate custom_id values ({shown}{more}); every custom_id must be "
                                  "unique so results can be matched and resumed. Nothing was sent.",
                                  field="custom_id")
    return lines, tokens


def read_done_ids(path: Path) -> set[str]:
    """custom_ids already in an output file. A torn last line (a crash mid-write) is cut off the file."""
    done: set[str] = set()
    if not path.exists():
        return done
    good_end = 0
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # torn tail
            good_end += len(raw)
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            cid = obj.get("custom_id") if isinstance(obj, dict) else None
            if isinstance(cid, str):
                done.add(cid)
    if good_end != path.stat().st_size:
        with path.open("r+b") as f:
            f.truncate(good_end)
    return done


def _requests(path: Path, done: set[str], report: JsonlReport, defaults: Mapping[str, Any]) -> Iterator[BatchRequest]:
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            where = f"line {lineno}: "
            try:
                obj = json.loads(raw)
            except ValueError as exc:
                cid = f"line-{lineno}"
                if cid in done:
                    report.skipped += 1
                    continue
                err = InvalidRequestError(f"{where}not valid JSON ({exc})", field="line")
                report.bad_lines.append((lineno, str(err)))
                yield BatchRequest(lineno - 1, cid, {}, invalid=err)
                continue
            cid = _line_id(obj, lineno)
            if cid in done:
                report.skipped += 1
                continue
            if not isinstance(obj, dict):
                item = BatchRequest(lineno - 1, cid, {}, invalid=InvalidRequestError(
                    f"{where}expected a JSON object, got {type(obj).__name__}", field="line"))
            else:
                item = normalize_item(obj, lineno - 1, defaults, where=where, custom_id=cid)
            if item.invalid is not None:
                report.bad_lines.append((lineno, str(item.invalid)))
            yield item


class _Writer:
    def __init__(self, out: TextIO, report: JsonlReport, on_result: Callable[[BatchResult], None] | None) -> None:
        self.out, self.report, self.on_result = out, report, on_result

    def __call__(self, result: BatchResult) -> None:
        report = self.report
        cid = json.dumps(result.custom_id)
        if result.response is not None:
            self.out.write('{"custom_id":' + cid + ',"response":' + result.response.model_dump_json() + "}\n")
            report.succeeded += 1
        else:
            error = result.error
            assert error is not None
            if result.attempts == 0 and (isinstance(error, APIStatusError) and error.status_code in (401, 402, 429)):
                report.not_run += 1  # the batch stopped before sending it: leave it for --resume
                return
            self.out.write(json.dumps({"custom_id": result.custom_id, "error": error_record(error)}) + "\n")
            report.failed += 1
        self.out.flush()
        if self.on_result is not None:
            self.on_result(result)


def _prepare(input_path: PathLike, output_path: PathLike, resume: bool, overwrite: bool,
             defaults: Mapping[str, Any]) -> tuple[Path, Path, JsonlReport, set[str], int]:
    src, dst = Path(input_path), Path(output_path)
    if not src.is_file():
        raise InvalidRequestError(f"input file {src} does not exist.", field="input_path")
    if dst.exists() and dst.stat().st_size > 0 and not (resume or overwrite):
        raise InvalidRequestError(f"output file {dst} already has results: pass resume=True (--resume) to "
                                  "continue it, or overwrite=True to start again.", field="output_path")
    lines, tokens = _scan(src, defaults)
    report = JsonlReport(str(src), str(dst), lines=lines)
    done = read_done_ids(dst) if resume else set()
    if overwrite and not resume and dst.exists():
        dst.write_bytes(b"")
    return src, dst, report, done, tokens


async def _run(send: Send, quota: QuotaFn | None, src: Path, dst: Path, report: JsonlReport, done: set[str],
               tokens: int, kwargs: dict[str, Any]) -> JsonlReport:
    from ._api import _split
    from ._progress import make_progress

    progress = kwargs.pop("progress", False)
    on_result = kwargs.pop("on_result", None)
    on_progress = kwargs.pop("on_progress", None)
    options, defaults = _split(kwargs)
    with dst.open("a", encoding="utf-8", newline="\n") as out:
        it = BatchIterator(send, _requests(src, done, report, defaults), defaults=defaults, options=options,
                           quota=quota, estimated_tokens=tokens if not done else None,
                           total=max(0, report.lines - len(done)), on_result=_Writer(out, report, on_result),
                           on_progress=on_progress, progress=make_progress(progress))
        async with it:
            async for _ in it:
                pass
    report.summary = BatchSummary.from_stats(it.stats, it.stats.done)
    return report


async def arun_jsonl(client: AsyncClient, input_path: PathLike, output_path: PathLike, *, resume: bool = False,
                     overwrite: bool = False, **kwargs: Any) -> JsonlReport:
    """Async `run_jsonl` for an AsyncClient."""
    src, dst, report, done, tokens = _prepare(input_path, output_path, resume, overwrite, _defaults_of(kwargs))
    send = client_sender(client.chat.completions.create)
    return await _run(send, client.quota.retrieve, src, dst, report, done, tokens, kwargs)


def _defaults_of(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    from ._api import _OPTION_NAMES

    skip = _OPTION_NAMES | {"progress", "on_result", "on_progress"}
    return {k: v for k, v in kwargs.items() if k not in skip and v is not None}


def run_jsonl(client: Client, input_path: PathLike, output_path: PathLike, *, model: str | None = None,
              concurrency: int = 16, rpm: float | None = None, tpm: float | None = None, resume: bool = False,
              overwrite: bool = False, progress: Any = False, **kwargs: Any) -> JsonlReport:
    """Run every request of a JSONL file and append one result line per input to ``output_path``.

    Duplicate custom_ids are rejected before anything is sent; a malformed line becomes an error line
    naming its line number and does not stop the others. ``resume=True`` skips custom_ids already in
    the output (a torn last line from a crash is cut first). Other keyword arguments are those of
    ``client.chat.completions.batch`` (``max_tokens``, ``max_retries``, ``require_quota``, ...).
    """
    kwargs.update(model=model, concurrency=concurrency, rpm=rpm, tpm=tpm, progress=progress)
    src, dst, report, done, tokens = _prepare(input_path, output_path, resume, overwrite, _defaults_of(kwargs))

    async def main() -> JsonlReport:
        send, quota, close = await sync_backend(client, concurrency)
        try:
            return await _run(send, quota, src, dst, report, done, tokens, kwargs)
        finally:
            await close()

    return run_in_private_loop(main)

"""The input side of a JSONL run: parse each line once into what the engine is sent (or why it cannot
be), and check the whole file before anything is sent (unique custom_ids, paths, and on resume that
the output answers this input)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from holysheep._engine.requests import normalize_item
from holysheep._exceptions import InvalidRequestError
from holysheep.batch._jsonl_output import OutputMismatchError, PriorResult, request_hash

if TYPE_CHECKING:
    from holysheep.batch._jsonl_report import JsonlReport

__all__ = ["InputLine", "check_paths", "read_lines", "scan_input"]


@dataclass(slots=True)
class InputLine:
    lineno: int
    custom_id: str
    digest: str
    item: dict[str, object] | None  # what the engine is given; None when the line is bad
    problem: str | None  # why it is bad (no line number: the caller adds one)
    tokens: int = 0  # the limiters' estimate for it


def _line_id(obj: object, lineno: int) -> str:
    cid = obj.get("custom_id") if isinstance(obj, dict) else None
    if cid is None:
        return f"line-{lineno}"
    return cid if isinstance(cid, str) else json.dumps(cid)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(obj: object) -> bool:
    """True when a parsed line holds a surrogate that is not half of a pair (valid JSON, not Unicode)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _parse(lineno: int, raw: bytes, defaults: Mapping[str, object]) -> InputLine:
    text = raw.rstrip(b"\r\n")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return InputLine(lineno, f"line-{lineno}", request_hash(text), None,
                     f"not valid JSON ({exc.msg} at column {exc.colno})")
    except ValueError as exc:  # not UTF-8
        return InputLine(lineno, f"line-{lineno}", request_hash(text), None, f"not valid JSON ({exc})")
    if _SURROGATE_ESCAPE.search(text) is not None and _lone_surrogate(obj):
        cid = _line_id(obj, lineno)
        return InputLine(lineno, f"line-{lineno}" if _lone_surrogate(cid) else cid, request_hash(text), None,
                         "contains a lone UTF-16 surrogate escape (such as \\ud800): half of a character, which "
                         "cannot be sent as UTF-8; fix or remove the escape")
    cid, digest = _line_id(obj, lineno), request_hash(text, obj, parsed=True)
    if not isinstance(obj, dict):
        return InputLine(lineno, cid, digest, None, f"expected a JSON object, got {type(obj).__name__}")
    where = f"line {lineno}: "
    request = normalize_item(obj, lineno - 1, defaults, where=where, custom_id=cid)
    if request.invalid is not None:
        message = str(request.invalid)
        return InputLine(lineno, cid, digest, None, message[len(where):] if message.startswith(where) else message)
    if request.wire is not None:  # another format than chat and embeddings (/v1/responses): the line keeps its url
        item: dict[str, object] = {"custom_id": cid, "method": "POST", "url": f"/v1/{request.wire.path}",
                                   "body": request.params}
        return InputLine(lineno, cid, digest, item, None, request.est_tokens)
    return InputLine(lineno, cid, digest, {"custom_id": cid, **request.params}, None, request.est_tokens)


def read_lines(path: Path, defaults: Mapping[str, object], end: int | None = None) -> Iterator[InputLine]:
    """The lines of ``path``, parsed; with ``end``, only its first ``end`` bytes (what the file held when the
    run started: lines appended while it runs are not read)."""
    pos = 0
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            if end is not None:
                if pos >= end:
                    return
                if pos + len(raw) > end:
                    raw = raw[:end - pos]
                pos += len(raw)
            if raw.strip():
                yield _parse(lineno, raw, defaults)


def check_paths(src: Path, dst: Path) -> None:
    if not src.is_file():
        raise InvalidRequestError(f"input file {src} does not exist.", field="input_path")
    if dst.is_dir():
        raise InvalidRequestError(f"the output path {dst} is a folder: name a file in it, such as "
                                  f"{dst / 'out.jsonl'}.", field="output_path")
    same = dst.resolve() == src.resolve()
    if not same and dst.exists():
        same = os.path.samefile(src, dst)
    if same:
        raise InvalidRequestError(f"the output file is the input file ({src}): results would overwrite the "
                                  "requests. Pass a different output path (-o).", field="output_path")
    if not dst.parent.is_dir():
        raise InvalidRequestError(f"the folder of the output file {dst} does not exist: create it first.",
                                  field="output_path")


def check_cache_path(cache: object, dst: Path) -> None:
    """The response cache (a path, or a cache over an SQLite file) is never the output file: each would
    corrupt the other. Checked before anything is opened, written or sent."""
    if cache is None:
        return
    store = getattr(cache, "store", cache)  # a ResponseCache's store
    where = getattr(store, "path", None) if not isinstance(cache, (str, os.PathLike)) else cache
    if where is None:
        return
    path = Path(where).expanduser()
    same = path.resolve() == dst.resolve() or (path.exists() and dst.exists() and os.path.samefile(path, dst))
    if same:
        raise InvalidRequestError(f"the response cache file and the output file are the same file ({dst}): each "
                                  "would corrupt the other. Name a different --cache FILE or -o OUTPUT.",
                                  field="cache")


def scan_input(src: Path, dst: Path, prior: dict[str, PriorResult], defaults: Mapping[str, object],
               report: JsonlReport, end: int | None = None, rerun_changed: bool = False) -> tuple[list[str], int, int]:
    """Check the input before anything is sent: unique custom_ids, and (when resuming) that the
    output's lines answer this input. A line changed since its *successful* result was written is refused,
    or with ``rerun_changed`` marked to run again (``prior`` then says it failed); a changed line whose last
    result failed (a bad line, now fixed) simply runs. Counts `report.lines` and `report.skipped`; returns
    the ids in input order, how many lines will be sent and their estimated tokens."""
    seen: dict[str, int] = {}
    dupes: dict[str, list[int]] = {}
    mismatched: list[str] = []
    to_send = tokens = 0
    for line in read_lines(src, defaults, end):
        report.lines += 1
        first = seen.setdefault(line.custom_id, line.lineno)
        if first != line.lineno:
            dupes.setdefault(line.custom_id, [first]).append(line.lineno)
        before = prior.get(line.custom_id)
        if before is not None and before.ok and before.request_hash is not None \
                and before.request_hash != line.digest:
            if rerun_changed:  # its old result is replaced: the new line runs, the compaction keeps its result
                before = prior[line.custom_id] = PriorResult(ok=False, request_hash=before.request_hash)
            else:
                mismatched.append(f"{line.custom_id!r} (line {line.lineno})")
        if before is not None and before.ok:
            report.skipped += 1
        elif line.item is not None:
            to_send += 1
            tokens += line.tokens
    if dupes:
        shown = "; ".join(f"{cid!r} on lines {', '.join(map(str, ls))}" for cid, ls in list(dupes.items())[:5])
        more = f" and {len(dupes) - 5} more" if len(dupes) > 5 else ""
        raise InvalidRequestError(f"{src}: duplicate custom_id values ({shown}{more}); every custom_id must be "
                                  "unique so results can be matched and resumed. Nothing was sent.",
                                  field="custom_id")
    strangers = [cid for cid, before in prior.items() if cid not in seen and before.ok]  # a failure's line is
    # dropped at the end instead: a bad line (say bad JSON, named line-N) fixed since then may carry its own id
    if mismatched or strangers:
        what = (f"{len(mismatched)} line(s) changed since their results were written (first: {mismatched[0]})"
                if mismatched else f"it has results for {len(strangers)} custom_id(s) that {src} does not "
                f"contain (first: {strangers[0]!r})")
        fix = ("To send the changed lines again (their old results are replaced, the others kept), pass "
               "--rerun-changed (rerun_changed=True) with --resume; or use a new output file, or overwrite=True "
               "(--overwrite) to start again" if mismatched else "Use a new output file, or overwrite=True "
               "(--overwrite) to start again")
        raise OutputMismatchError(f"{dst} holds results for a different input than {src}: {what}. {fix}. "
                                  "Nothing was sent.", field="output_path")
    return list(seen), to_send, tokens



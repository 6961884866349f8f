"""``JsonlReport``: what one JSONL run did (returned by `run_jsonl`, printed by ``holysheep batch``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from holysheep._engine.results import BatchSummary

__all__ = ["MAX_ERRORS", "JsonlReport"]

MAX_ERRORS = 20
"""Failed lines whose explanation a report keeps (and ``holysheep batch`` prints)."""


@dataclass
class JsonlReport:
    """What a JSONL run did.

    `skipped`: lines already done (their last result succeeded) and not sent again; `rerun`: lines
    whose last result was a failure and that ran again (also counted in `succeeded`/`failed`);
    `not_run`: lines left without a result because the batch stopped (`--resume` runs them);
    `bad_lines`: `(line number, what is wrong)` for lines that could not be sent;
    `errors`: `(custom_id, the SDK's explanation)` of the first `MAX_ERRORS` failed lines (an OpenAI-format
    line carries the server's own error instead);
    `compaction_error`: why the final rewrite to one line per custom_id failed (a full disk), when it did:
    the results are intact (appended lines, the last per custom_id counts) and the next run compacts them.
    """

    input_path: str
    output_path: str
    lines: int = 0
    skipped: int = 0
    rerun: int = 0
    succeeded: int = 0
    failed: int = 0
    not_run: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    summary: BatchSummary | None = None
    compaction_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when every line ran (or was already done) and succeeded."""
        return self.failed == 0 and self.not_run == 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return asdict(self)

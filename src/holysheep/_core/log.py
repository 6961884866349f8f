"""The ``holysheep`` loggers: off by default, ``HOLYSHEEP_LOG=debug|info`` (or ``OPENAI_LOG``) turns them on; keys
are scrubbed.

Every logger of the SDK comes from `get_logger`, which gives it the scrubbing filter: a logger's filters see
only the records logged on it, not those its children propagate, so each one needs its own."""

from __future__ import annotations

import logging
import os

from holysheep._core.keys import redact
from holysheep._egress import scrub

__all__ = ["get_logger", "logger", "retry_logger", "setup_logging"]


class _RedactKeysFilter(logging.Filter):
    """Last line of defence: the egress scrubber over every record (the keys of this process's clients,
    and anything shaped like a HolySheep key)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = scrub(redact(msg) if "hs_" in msg else msg)
        if clean != msg:
            record.msg = clean
            record.args = None
        return True


_FILTER = _RedactKeysFilter()


def get_logger(name: str = "holysheep") -> logging.Logger:
    """The logger ``name`` (``holysheep`` or below it) with the scrubbing filter installed."""
    log = logging.getLogger(name)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log


logger = get_logger()
_configured = False


retry_logger = get_logger("holysheep._base_client")
"""Where each retry is logged at INFO, in openai-python's words (its logger is ``openai._base_client``)."""


def setup_logging() -> None:
    """Apply ``HOLYSHEEP_LOG`` (or, when it is unset, openai-python's ``OPENAI_LOG``) once per process (the
    scrubbing filter is on every SDK logger already)."""
    global _configured
    if _configured:
        return
    _configured = True
    level = (os.environ.get("HOLYSHEEP_LOG") or os.environ.get("OPENAI_LOG") or "").strip().lower()
    if level in ("debug", "info", "warning", "error", "critical"):
        logger.setLevel(level.upper())
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(asctime)s %(name)s %(levelname)s] %(message)s"))
            handler.addFilter(_FILTER)
            logger.addHandler(handler)

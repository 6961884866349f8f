"""The ``holysheep`` loggers: off by default, ``HOLYSHEEP_LOG=debug|info`` turns them on; keys are scrubbed.

Every logger of the SDK comes from `get_logger`, which gives it the scrubbing filter: a logger's filters see
only the records logged on it, not those its children propagate, so each one needs its own."""

from __future__ import annotations

import logging
import os

from holysheep._core.keys import redact
from holysheep._egress import scrub

__all__ = ["get_logger", "logger", "setup_logging"]


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


def setup_logging() -> None:
    """Apply ``HOLYSHEEP_LOG`` once per process (the scrubbing filter is on every SDK logger already)."""
    global _configured
    if _configured:
        return
    _configured = True
    level = os.environ.get("HOLYSHEEP_LOG", "").strip().lower()
    if level in ("debug", "info", "warning"):
        logger.setLevel(level.upper())
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(asctime)s %(name)s %(levelname)s] %(message)s"))
            handler.addFilter(_FILTER)
            logger.addHandler(handler)

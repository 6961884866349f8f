"""The ``holysheep`` logger: off by default, ``HOLYSHEEP_LOG=debug|info`` turns it on; keys are scrubbed."""

from __future__ import annotations

import logging
import os

from holysheep._core.keys import redact

__all__ = ["logger", "setup_logging"]

logger = logging.getLogger("holysheep")


class _RedactKeysFilter(logging.Filter):
    """Last line of defence: scrub anything shaped like a HolySheep key from every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if "hs_" in msg:
            record.msg = redact(msg)
            record.args = None
        return True


_configured = False


def setup_logging() -> None:
    """Install the redaction filter and apply ``HOLYSHEEP_LOG`` once per process."""
    global _configured
    if _configured:
        return
    _configured = True
    logger.addFilter(_RedactKeysFilter())
    level = os.environ.get("HOLYSHEEP_LOG", "").strip().lower()
    if level in ("debug", "info", "warning"):
        logger.setLevel(level.upper())
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(asctime)s %(name)s %(levelname)s] %(message)s"))
            handler.addFilter(_RedactKeysFilter())
            logger.addHandler(handler)

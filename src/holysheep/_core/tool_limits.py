"""The bounds on running tools (pure): a call's default ``tool_timeout``, the default number of tool threads,
and their checks. Read by the tool loop (``run_tools``, batch agents), the client options and the tool pool."""

from __future__ import annotations

import math

from holysheep._exceptions import InvalidRequestError

__all__ = ["DEFAULT_TOOL_THREADS", "DEFAULT_TOOL_TIMEOUT", "check_tool_threads", "check_tool_timeout"]

DEFAULT_TOOL_TIMEOUT = 60.0
"""Seconds one tool call may run before its result is an error text for the model (``tool_timeout=``)."""

DEFAULT_TOOL_THREADS = 64
"""Tool calls running at once, per client setting (``tool_threads=``): above a batch's default concurrency (16)
times a few calls per turn, so a slow tool does not make a ready one wait."""


def check_tool_timeout(value: object) -> float | None:
    """``tool_timeout``: seconds > 0 (finite), or None for no limit."""
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value <= 0):
        raise InvalidRequestError(f"tool_timeout must be seconds > 0 or None (no limit), got {value!r}. It is how "
                                  "long one tool call may run before the model is told it timed out.",
                                  field="tool_timeout")
    return float(value)


def check_tool_threads(value: object) -> int:
    """``tool_threads``: an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequestError(f"tool_threads must be an integer >= 1, got {value!r}. It is how many tool calls "
                                  "may run at once.", field="tool_threads")
    return value

"""Whether a 2xx chat completion carries an answer (pure code).

Every field of ``ChatCompletion`` has a default, so ``{}``, ``{"error": {...}}`` and ``{"choices": []}``
validate. A reply without a single choice is not an answer: `check_answer` turns it into `NoAnswerError`,
which ``Call`` raises as a retryable `APIResponseValidationError` carrying the (scrubbed) body.
"""

from __future__ import annotations

import json
from typing import TypeVar

from holysheep._core.json_check import load_json

__all__ = ["NoAnswerError", "check_answer"]

_T = TypeVar("_T")


class NoAnswerError(ValueError):
    """A 2xx body that is valid JSON of the right shape but holds no choice (no answer)."""


def _describe(content: bytes) -> str:
    try:
        body = load_json(content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            text = message if isinstance(message, str) else json.dumps(message)[:300]
            return f"the body is an error object: {text[:300]!r}"
        if not body:
            return "the body is an empty JSON object"
    return "the body has no choices"


def check_answer(completion: _T, content: bytes) -> _T:
    """``completion`` when it has at least one choice; raises `NoAnswerError` saying what came instead."""
    if getattr(completion, "choices", None):
        return completion
    raise NoAnswerError(_describe(content))

"""The most tokens a request could use, which caps the usage a reply may charge to the TPM bucket: a server may
honour either of ``max_tokens`` and ``max_completion_tokens``, so the larger one counts."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_core import to_json

from holysheep._engine.requests import MAX_COMPLETION_TOKENS, possible_tokens

BASE: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("limits", "completion"), [
    ({"max_tokens": 4000, "max_completion_tokens": 15}, 4000),
    ({"max_tokens": 15, "max_completion_tokens": 4000}, 4000),
    ({"max_tokens": 0, "max_completion_tokens": 7}, 7),
    ({"max_completion_tokens": 7}, 7),
    ({}, MAX_COMPLETION_TOKENS),
    ({"max_tokens": True, "max_completion_tokens": -1}, MAX_COMPLETION_TOKENS),
])
def test_the_larger_output_limit_counts(limits: dict[str, Any], completion: int) -> None:
    params = {**BASE, **limits, "n": 2}
    assert possible_tokens(params) == len(to_json(params)) + 2 * completion

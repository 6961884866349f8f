"""A client's settings are checked by one function: ``make_config`` (the constructor) and
``ClientConfig.replace`` refuse each bad value with the same typed error and message, and normalize alike."""

from __future__ import annotations

from typing import Any

import pytest

from holysheep import InvalidRequestError
from holysheep._core.config import make_config

KEY = "hs_" + "a" * 32
URL = "http://127.0.0.1:9/v1"

BAD: list[dict[str, Any]] = [
    {"default_headers": "x"}, {"default_headers": {"a": 1}}, {"timeout": "x"}, {"max_retries": -1},
    {"initial_retry_delay": -1}, {"max_retry_delay": "x"}, {"max_retry_after": -0.5},
    {"stream_idle_timeout": "x"}, {"on_retry": 3}, {"max_response_bytes": 0}, {"max_sse_event_bytes": -1},
    {"hooks": [3]}, {"clock": 3},
]


def _config(**options: Any) -> Any:
    return make_config(**{"api_key": KEY, "base_url": URL, "timeout": 5.0, "max_retries": 2, **options})


def _error(build: Any) -> str:
    with pytest.raises(InvalidRequestError) as info:
        build()
    return f"{info.value.field}: {info.value}"


@pytest.mark.parametrize("bad", BAD, ids=lambda d: next(iter(d)))
def test_constructor_and_replace_refuse_alike(bad: dict[str, Any]) -> None:
    assert _error(lambda: _config(**bad)) == _error(lambda: _config().replace(**bad))


def test_replace_normalizes_as_the_constructor_does() -> None:
    options: dict[str, Any] = {"initial_retry_delay": 1, "max_retry_after": 3, "timeout": 7, "on_retry": None}
    built, replaced = _config(**options), _config().replace(**options)
    for name in options:
        assert getattr(built, name) == getattr(replaced, name), name
        assert type(getattr(built, name)) is type(getattr(replaced, name)), name

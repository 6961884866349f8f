"""Table-driven tests of the Retry-After parser and the retry rules (pure functions)."""

from __future__ import annotations

import pytest

from holysheep._core.retry import RetryPolicy, backoff_delay, parse_retry_after, server_delay, status_is_retryable

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": " 2 "}, 2.0),
        ({"retry-after": "-1"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "1e400"}, None),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"}, 10.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:00 GMT"}, 0.0),  # in the past
        ({"retry-after": "Tue, 99 Nov 2023 99:99:99 GMT"}, None),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "-5", "retry-after": "9"}, 9.0),
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({"retry-after-ms": "junk"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=lambda: NOW) == expected


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses(status: int) -> None:
    assert status_is_retryable(status, {})


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 413])
def test_non_retryable_statuses(status: int) -> None:
    assert not status_is_retryable(status, {})


def test_retry_after_is_read_for_exactly_the_retried_statuses() -> None:
    """One table: every status the retry rule retries honours Retry-After, and no other status does."""
    headers = {"retry-after": "3"}
    for status in range(400, 600):
        assert (server_delay(status, headers) == 3.0) is status_is_retryable(status, {}), status
    assert server_delay(401, headers) is None


def test_should_retry_header_overrides() -> None:
    assert status_is_retryable(400, {"x-should-retry": "true"})
    assert not status_is_retryable(503, {"x-should-retry": "false"})
    assert status_is_retryable(503, {"x-should-retry": "maybe"})


def test_backoff_is_exponential_capped_with_jitter() -> None:
    policy = RetryPolicy(max_retries=10, initial_delay=0.5, max_delay=8.0)
    assert [backoff_delay(policy, n, rand=lambda: 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff_delay(policy, 2, rand=lambda: 1.0) == 1.5  # 75% of nominal at most jitter
    assert backoff_delay(policy, 10_000, rand=lambda: 0.0) == 8.0

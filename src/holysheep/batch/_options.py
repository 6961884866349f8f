"""Batch options and the callables the engine runs on: `BatchOptions`, `Send`, `QuotaFn`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .._exceptions import APIStatusError, InvalidRequestError
from ..types.chat import ChatCompletion
from ._results import BatchResult

__all__ = ["BatchOptions", "OnResult", "QuotaFn", "Send", "client_sender", "is_quota_exhausted"]

Send = Callable[[dict[str, Any]], Awaitable[ChatCompletion]]
"""Sends one chat completion with the given create() parameters (no retries of its own)."""
QuotaFn = Callable[[], Awaitable[Any]]
OnResult = Callable[[BatchResult], None]


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs. See `holysheep.AsyncClient.chat.completions.batch` for the meaning."""

    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    max_retries: int = 5
    retry_budget: float | None = 0.2
    adaptive: bool = True
    max_retry_after: float = 60.0
    initial_retry_delay: float = 0.5
    max_retry_delay: float = 8.0
    read_ahead: int | None = None
    check_quota: bool = True
    require_quota: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise InvalidRequestError(f"concurrency must be an integer >= 1, got {self.concurrency!r}.",
                                      field="concurrency")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise InvalidRequestError(f"{name} must be a number > 0 or None, got {value!r}.", field=name)
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise InvalidRequestError(f"max_retries must be an integer >= 0, got {self.max_retries!r}.",
                                      field="max_retries")
        if self.retry_budget is not None and not self.retry_budget >= 0:
            raise InvalidRequestError(f"retry_budget must be >= 0 or None, got {self.retry_budget!r}.",
                                      field="retry_budget")


def is_quota_exhausted(error: BaseException) -> bool:
    """A 429 or 402 whose type or code is ``insufficient_quota``: retrying cannot help."""
    return (isinstance(error, APIStatusError) and error.status_code in (402, 429)
            and "insufficient_quota" in (error.type, error.code))


def client_sender(create: Callable[..., Awaitable[ChatCompletion]]) -> Send:
    """A `Send` over an async ``chat.completions.create`` (client retries off: the batch retries)."""

    async def send(params: dict[str, Any]) -> ChatCompletion:
        return await create(**params)

    return send

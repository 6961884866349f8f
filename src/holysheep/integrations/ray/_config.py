"""What a processor hands its replicas: `ReplicaConfig`, with the API key held in a `Secret`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from holysheep.integrations.ray._rows import RowSpec

__all__ = ["ReplicaConfig", "Secret"]


class Secret:
    """A string that never shows itself: its repr and str are masked (Ray's dashboard and logs show reprs)."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value

    def reveal(self) -> str | None:
        """The secret value (for the client's constructor only)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')" if self._value else "Secret(None)"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (Secret, (self._value,))


@dataclass(frozen=True)
class ReplicaConfig:
    """Everything one replica needs; safe to print (the key is a `Secret`)."""

    api_key: Secret
    base_url: str | None
    timeout: float | None
    max_retries: int
    fallbacks: Sequence[object] | None
    rows: RowSpec
    concurrency: int
    batch_options: Mapping[str, object] = field(default_factory=dict)
    client_options: Mapping[str, object] = field(default_factory=dict)
    limiter_name: str | None = None
    limiter_namespace: str | None = None
    chunk: int = 1
    token_chunk: int = 0
    limit_tokens: bool = False
    rpm: float | None = None
    tpm: float | None = None
    burst_s: float = 0.5

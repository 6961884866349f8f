"""``Fault``: one injected failure of the test server, described as data (the plan that applies it is
``._faults``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fault"]

_KINDS = frozenset(
    {
        "status",
        "reset",
        "stall",
        "malformed_json",
        "stream_cut",
        "stream_error",
        "unauthorized",
        "quota_exhausted",
    }
)


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build it with the class methods, e.g. ``Fault.status(429, retry_after=0.01)``.

    ``kind`` is one of ``status``, ``reset``, ``stall``, ``malformed_json``, ``stream_cut``,
    ``stream_error``, ``unauthorized``, ``quota_exhausted``.
    """

    kind: str
    status_code: int | None = None
    retry_after: float | None = None
    seconds: float | None = None
    after_events: int = 2
    message: str | None = None
    error_type: str | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(_KINDS)}")

    @classmethod
    def status(
        cls, status_code: int, *, retry_after: float | None = None, message: str | None = None
    ) -> Fault:
        """An error response with this status (4xx/5xx) and an OpenAI error body.

        ``retry_after`` (seconds) adds a ``Retry-After`` header; 429 gets type ``rate_limit_exceeded``,
        5xx ``server_error``.
        """
        if not 400 <= status_code <= 599:
            raise ValueError(f"status_code must be 4xx or 5xx, got {status_code}")
        return cls("status", status_code=status_code, retry_after=retry_after, message=message)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0) -> Fault:
        """429 with ``Retry-After``."""
        return cls.status(429, retry_after=retry_after)

    @classmethod
    def reset(cls) -> Fault:
        """Close the connection without a response (a TCP RST, via ``SO_LINGER`` 0)."""
        return cls("reset")

    @classmethod
    def stall(cls, seconds: float | None = None) -> Fault:
        """Read the request, then answer nothing: forever (until ``stop()``), or for ``seconds`` and then
        answer normally."""
        return cls("stall", seconds=seconds)

    @classmethod
    def malformed_json(cls) -> Fault:
        """Status 200 with a truncated JSON body (for a stream: a truncated first chunk, then ``[DONE]``)."""
        return cls("malformed_json")

    @classmethod
    def stream_cut(cls, after_events: int = 2) -> Fault:
        """Send ``after_events`` SSE events, then close the connection without the end of the body.

        A JSON response is cut half-way through its ``Content-Length`` body instead.
        """
        return cls("stream_cut", after_events=after_events)

    @classmethod
    def stream_error(
        cls,
        message: str = "The server had an error while processing your request.",
        *,
        error_type: str = "server_error",
        code: str | None = None,
        after_events: int = 1,
    ) -> Fault:
        """Send ``after_events`` SSE events, then ``data: {"error": {...}}`` and end the body (no ``[DONE]``).

        A JSON request gets a 500 with that error instead.
        """
        return cls(
            "stream_error", after_events=after_events, message=message, error_type=error_type, code=code
        )

    @classmethod
    def unauthorized(cls) -> Fault:
        """401 ``invalid_api_key``, whatever key was sent."""
        return cls("unauthorized")

    @classmethod
    def quota_exhausted(cls) -> Fault:
        """429 with type and code ``insufficient_quota`` and no ``Retry-After``."""
        return cls("quota_exhausted")

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """A fault from a short name: ``"429"``, ``"503"``, ``"reset"``, ``"stall"``, ``"malformed_json"``,
        ``"stream_cut"``, ``"stream_error"``, ``"unauthorized"`` / ``"401"``, ``"quota_exhausted"``."""
        name = spec.strip().lower().replace("-", "_")
        if name in ("401", "unauthorized"):
            return cls.unauthorized()
        if name.isdigit():
            return cls.status(int(name), retry_after=0.05 if name == "429" else None)
        if name in _KINDS and name != "status":
            return cls(name)
        raise ValueError(f"unknown fault {spec!r}")

    @property
    def name(self) -> str:
        """A short label: ``"429"``, ``"500"``, ``"reset"``, ``"stream_cut"``…"""
        return str(self.status_code) if self.kind == "status" else self.kind

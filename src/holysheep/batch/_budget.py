"""The batch-wide retry budget: retries may add at most ``ratio`` to the request volume."""

from __future__ import annotations

__all__ = ["RetryBudget"]


class RetryBudget:
    """Allows a retry while ``retries < ratio * max(first_attempts, min_requests)``.

    With the defaults (20 %, 50) the first 50 requests share 10 retries, and after that retries add at
    most 20 % to the number of first attempts. ``ratio=None`` disables the budget (only the per-item
    ``max_retries`` applies). When an outage exhausts it, items fail with their last error instead of
    multiplying the load.
    """

    def __init__(self, ratio: float | None = 0.2, min_requests: int = 50) -> None:
        if ratio is not None and ratio < 0:
            raise ValueError(f"retry_budget must be >= 0 or None, got {ratio}")
        self.ratio = ratio
        self.min_requests = min_requests
        self.first_attempts = 0
        self.retries = 0
        self.denied = 0

    def on_first_attempt(self) -> None:
        """Count a request sent for the first time."""
        self.first_attempts += 1

    @property
    def limit(self) -> float | None:
        """Retries allowed so far (None: unlimited)."""
        if self.ratio is None:
            return None
        return self.ratio * max(self.first_attempts, self.min_requests)

    def try_take(self) -> bool:
        """Take one retry from the budget; False (and counted as denied) when it is spent."""
        limit = self.limit
        if limit is not None and self.retries + 1 > limit:
            self.denied += 1
            return False
        self.retries += 1
        return True

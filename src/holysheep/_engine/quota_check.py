"""The quota check a batch makes before it sends anything (``check_quota=True``, the default)."""

from __future__ import annotations

from holysheep._core.log import get_logger
from holysheep._engine.sender import Sender
from holysheep._exceptions import APIError, AuthenticationError, QuotaExceededError, QuotaUnavailableError

__all__ = ["SKIP_OPTION", "check_quota"]

logger = get_logger("holysheep.batch")

SKIP_OPTION = "check_quota=False"
"""How a message names the option that skips the check; the record carries it in ``skip_option`` so that the
CLI can name its own flag instead (``--no-quota-check``)."""

_warned_no_quota: set[str] = set()


def _warn(msg: str) -> None:
    """One message on one channel: a logging WARNING on ``holysheep.batch`` (shown on stderr when logging is
    not set up), never also a ``RuntimeWarning`` (its location would be asyncio's, not the caller's)."""
    logger.warning("%s Pass %s to skip the quota check.", msg, SKIP_OPTION, extra={"skip_option": SKIP_OPTION})


def _warn_no_quota_once(exc: QuotaUnavailableError) -> None:
    """One warning per server without a quota endpoint, not one per batch."""
    where = str(exc.request.url) if exc.request is not None else ""
    if where in _warned_no_quota:
        return
    _warned_no_quota.add(where)
    _warn(f"Batch quota check skipped: this server has no quota endpoint ({where or 'GET /quota'} answered "
          "404). The batch runs without one.")


async def check_quota(sender: Sender, *, estimated_tokens: int | None, require: bool) -> AuthenticationError | None:
    """Compare the account's quota with the batch's estimate.

    Returns the `AuthenticationError` when the key was rejected (the batch then stops before sending).
    Raises `QuotaExceededError` / `QuotaUnavailableError` when `require` is set and the batch cannot
    be shown to fit; otherwise a shortfall or a missing quota endpoint is a warning.
    """
    try:
        info = await sender.quota()
    except AuthenticationError as exc:
        return exc
    except QuotaUnavailableError as exc:
        if require:
            raise QuotaUnavailableError(
                f"{exc.message} (require_quota=True: nothing was sent; drop it to run without a quota check.)",
                status_code=exc.status_code, request=exc.request, body=exc.body) from None
        _warn_no_quota_once(exc)
        return None
    except APIError as exc:
        if require:
            raise QuotaExceededError(f"The quota check failed ({exc.message}); require_quota=True: nothing "
                                     "was sent. Try again, or drop require_quota.") from exc
        logger.debug("quota check skipped: %s", exc)
        return None
    remaining = getattr(info, "remaining", None)
    unit = getattr(info, "unit", None)
    if remaining is None or (unit not in (None, "tokens")):
        return None
    if remaining <= 0 or (estimated_tokens is not None and estimated_tokens > remaining):
        need = f"about {estimated_tokens:,} tokens" if estimated_tokens is not None else "tokens"
        msg = (f"The batch needs {need} (prompt chars/4 + max_tokens) but the account has {remaining:,.0f} "
               "left; it may stop part-way with insufficient_quota.")
        if require:
            raise QuotaExceededError(msg + " (require_quota=True: nothing was sent.)")
        _warn(msg)
    return None

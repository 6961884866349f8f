"""Which redirects the SDK follows (pure policy, plus the hooks that apply it on httpx;
the aiohttp backend follows redirects itself and asks `redirect_refusal`).

- A redirect never moves a request from https to plain http on a host that is not loopback: the key,
  the prompt and the answer would travel in clear text.
- A request that carries a body (anything but GET/HEAD) is redirected only within its own origin
  (scheme, host and port): a 307/308 would otherwise resend the prompt and the idempotency key to
  another server. A GET may move to another origin (httpx and aiohttp drop the Authorization header).
"""

from __future__ import annotations

import httpx

from holysheep._core.config import is_loopback_host
from holysheep._exceptions import RedirectRefusedError

__all__ = ["REDIRECT_STATUSES", "check_redirect", "check_redirect_async", "redirect_refusal", "same_origin"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_REDIRECTS = REDIRECT_STATUSES


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    port = url.port or (443 if url.scheme == "https" else 80)
    return url.scheme, url.host, port


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Whether two URLs share scheme, host and (default-filled) port."""
    return _origin(a) == _origin(b)


def redirect_refusal(method: str, source: httpx.URL, target: httpx.URL) -> str | None:
    """Why a redirect from ``source`` to ``target`` must not be followed, or None when it may be."""
    if source.scheme == "https" and target.scheme == "http" and not is_loopback_host(target.host):
        return (f"The server redirected {method} {source.copy_with(query=None)} from https to plain http "
                f"({target.host}); the SDK does not follow a downgrade that would send the key and the prompt in "
                "clear text. Point base_url at the server's https address.")
    if method not in ("GET", "HEAD") and _origin(source) != _origin(target):
        return (f"The server redirected {method} {source.copy_with(query=None)} to another origin "
                f"({target.scheme}://{target.host}); the SDK follows a redirect of a request with a body only "
                "within the same origin, so the prompt and idempotency key are not sent elsewhere. Point base_url "
                "at the final server if it is trusted.")
    return None


def _refusal(response: httpx.Response) -> str | None:
    if response.status_code not in _REDIRECTS or "location" not in response.headers:
        return None
    request = response.request
    try:
        target = request.url.join(response.headers["location"])
    except Exception:  # an unusable Location: httpx reports it when it follows it
        return None
    return redirect_refusal(request.method, request.url, target)


def check_redirect(response: httpx.Response) -> None:
    """httpx response hook (sync client): raise `RedirectRefusedError` for a redirect the policy refuses."""
    reason = _refusal(response)
    if reason is not None:
        response.close()
        raise RedirectRefusedError(reason)


async def check_redirect_async(response: httpx.Response) -> None:
    """httpx response hook (async client)."""
    reason = _refusal(response)
    if reason is not None:
        await response.aclose()
        raise RedirectRefusedError(reason)

"""openai-python's ``http_client=`` helpers under their names: ``DefaultHttpxClient``, ``DefaultAsyncHttpxClient``,
``DefaultHttpx2Client``, ``DefaultAsyncHttpx2Client`` (an HTTP client with the SDK's timeout) and
``DefaultAioHttpClient`` (``AsyncClient``: send with aiohttp, which is already its default)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

import httpx

from holysheep._core.config import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    import httpx2

_T = TypeVar("_T")

__all__ = ["DefaultAioHttpClient", "DefaultAsyncHttpx2Client", "DefaultAsyncHttpxClient", "DefaultHttpx2Client",
           "DefaultHttpxClient"]


def _build(cls: Callable[..., _T], kwargs: Mapping[str, object], timeout: object = DEFAULT_TIMEOUT) -> _T:
    return cls(**{"timeout": timeout, **kwargs})


def DefaultHttpxClient(**kwargs: object) -> httpx.Client:  # openai-python's name
    """An ``httpx.Client`` with the SDK's default timeout (openai's ``DefaultHttpxClient``), for ``http_client=``."""
    return _build(httpx.Client, kwargs)


def DefaultAsyncHttpxClient(**kwargs: object) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with the SDK's default timeout, for ``AsyncClient(http_client=...)``."""
    return _build(httpx.AsyncClient, kwargs)


def _httpx2_timeout() -> object:
    import httpx2

    t = DEFAULT_TIMEOUT
    return httpx2.Timeout(t.read, connect=t.connect, write=t.write, pool=t.pool)


def DefaultHttpx2Client(**kwargs: object) -> httpx2.Client:
    """An ``httpx2.Client`` with the SDK's default timeout (openai-python's ``DefaultHttpx2Client``; needs
    ``holysheep[httpx2]``). ``Client(http_client=...)`` sends through it."""
    import httpx2

    return _build(httpx2.Client, kwargs, _httpx2_timeout())


def DefaultAsyncHttpx2Client(**kwargs: object) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` with the SDK's default timeout, for ``AsyncClient(http_client=...)``."""
    import httpx2

    return _build(httpx2.AsyncClient, kwargs, _httpx2_timeout())


class DefaultAioHttpClient:
    """openai-python's ``http_client=DefaultAioHttpClient()``: ``AsyncClient`` sends with aiohttp (its default
    already), on its own connection pool, which the client owns and closes. Proxy, TLS and timeouts are the
    client's options (``proxy=``, ``verify=``, ``timeout=``), so it takes no arguments."""

    def __init__(self, **kwargs: object) -> None:
        if kwargs:
            from holysheep._exceptions import InvalidRequestError

            name = sorted(kwargs)[0]
            raise InvalidRequestError(
                f"DefaultAioHttpClient() takes no arguments, got {name}=: pass timeout=, proxy=, verify= and cert= "
                "to holysheep.AsyncClient itself (it sends with aiohttp by default).", field=name)

    async def __aenter__(self) -> DefaultAioHttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def aclose(self) -> None:
        """Nothing to close: the pool belongs to the ``AsyncClient``."""

    def __repr__(self) -> str:
        return "DefaultAioHttpClient()"

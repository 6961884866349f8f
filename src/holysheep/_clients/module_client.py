"""The module-level client, as openai-python's: ``holysheep.chat.completions.create(...)`` sends with a `Client`
built on first use from the module's settings (``holysheep.api_key``, ``holysheep.base_url``, ``timeout``,
``max_retries``, ``default_headers``, ``default_query``, ``http_client``; ``None``: the environment and the
defaults, as ``Client()``). A change to a setting takes effect at the next use; the copies share one pool."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from holysheep._clients.client import Client

__all__ = ["MODULE_SETTINGS", "close_module_client", "module_client"]

MODULE_SETTINGS = ("api_key", "base_url", "timeout", "max_retries", "default_headers", "default_query",
                   "http_client")
"""The module attributes the module-level client reads (openai-python's names)."""

_lock = threading.Lock()
_root: Client | None = None
_current: tuple[tuple[object, ...], Client] | None = None


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return all(x is y or (type(x) is type(y) and x == y) for x, y in zip(a, b, strict=True))


def module_client(settings: Mapping[str, object]) -> Client:
    """The module-level client for the module's current ``settings`` (built once, then a copy sharing its pool
    for each new set of settings)."""
    global _root, _current
    values = tuple(settings[name] for name in MODULE_SETTINGS)
    current = _current
    if current is not None and _same(current[0], values):
        return current[1]
    with _lock:
        kwargs = {name: value for name, value in zip(MODULE_SETTINGS, values, strict=True) if value is not None}
        if _root is None:
            build: Callable[..., Client] = Client  # each setting is checked by Client, as openai's are
            _root = client = build(**kwargs)
        else:
            headers, query = kwargs.pop("default_headers", None), kwargs.pop("default_query", None)
            copy: Callable[..., Client] = _root.with_options
            client = copy(**kwargs, set_default_headers=headers, set_default_query=query)
        _current = (values, client)
        return client


def close_module_client() -> None:
    """Close the module-level client's pool; the next use builds a new one (tests, or a forked worker)."""
    global _root, _current
    with _lock:
        root, _root, _current = _root, None, None
    if root is not None:
        root.close()

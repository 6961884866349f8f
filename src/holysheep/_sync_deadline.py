"""The per-attempt deadline on the sync httpx transport, response headers included.

httpx applies its read timeout to each socket read, so a server that trickles its status line and
headers one byte at a time never times out. The SDK's own sync pool therefore reads through
``DeadlineNetworkBackend``: every read waits at most until the deadline of the attempt running on
this thread (set with ``attempt_deadline``), and a read past it raises ``httpcore.ReadTimeout``,
which httpx maps to ``httpx.ReadTimeout`` (a retryable ``APITimeoutError``). A caller's own
``http_client`` keeps its own transport and only gets the body deadline.
"""

from __future__ import annotations

import contextlib
import time
import typing
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

import httpcore
import httpx

__all__ = ["DeadlineNetworkBackend", "attempt_deadline", "deadline_transport"]

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("holysheep_attempt_deadline", default=None)


@contextlib.contextmanager
def attempt_deadline(seconds: float | None) -> Iterator[None]:
    """Bound every socket read of the SDK's sync pool on this thread by ``seconds`` from now."""
    if seconds is None:
        yield
        return
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def _bounded(timeout: float | None) -> float | None:
    current = _deadline.get()
    if current is None:
        return timeout
    at, seconds = current
    left = at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout(f"the attempt took longer than its {seconds:g} s deadline (timeout=)")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose reads end at the attempt's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class DeadlineNetworkBackend(httpcore.NetworkBackend):
    """httpcore's sync socket backend, with reads bounded by ``attempt_deadline``."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` whose connections read through ``DeadlineNetworkBackend``."""
    transport = httpx.HTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)  # httpx does not pass a network backend through
    if isinstance(pool, httpcore.ConnectionPool) and hasattr(pool, "_network_backend"):
        pool._network_backend = DeadlineNetworkBackend()
    return transport

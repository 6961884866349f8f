"""The deadline-aware socket backend under the SDK's own sync httpx pool (see ``_sync_deadline``)."""

from __future__ import annotations

import typing
from collections.abc import Iterable

import httpcore
import httpx

from holysheep._transports._private_access import set_network_backend
from holysheep._transports.sync_deadline import bounded_read_timeout

__all__ = ["DeadlineNetworkBackend", "make_transport"]


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose reads end at the attempt's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, bounded_read_timeout(timeout))

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


def make_transport(limits: httpx.Limits, *, verify: typing.Any = True, proxy: str | None = None,
                   http2: bool = False) -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` whose connections read through ``DeadlineNetworkBackend`` (TLS with
    ``verify``, an ``ssl.SSLContext``; through ``proxy`` when given; HTTP/2 offered by ALPN with ``http2``)."""
    transport = httpx.HTTPTransport(limits=limits, verify=verify, proxy=httpx.Proxy(proxy) if proxy else None,
                                    http2=http2)
    set_network_backend(transport, DeadlineNetworkBackend())  # httpx passes no network backend through
    return transport

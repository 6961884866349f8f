"""The one TLS context of a client, shared by its httpx and aiohttp transports (and its batch's clients)."""

from __future__ import annotations

import ssl
import threading

from holysheep._core.network import NetworkSettings
from holysheep._exceptions import InvalidRequestError

__all__ = ["ssl_context"]

_lock = threading.Lock()


def _build(settings: NetworkSettings) -> ssl.SSLContext:
    verify = settings.verify
    if isinstance(verify, ssl.SSLContext):
        ctx = verify
    elif verify is False:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        cafile, capath = settings.cafile, settings.capath
        if cafile is None and capath is None:  # settings built by hand: the default store
            import certifi

            cafile = certifi.where()
        try:
            ctx = ssl.create_default_context(cafile=cafile, capath=capath)
        except (ssl.SSLError, OSError) as exc:
            raise InvalidRequestError(
                f"The CA store {settings.ca_source} could not be loaded ({exc}). Point SSL_CERT_FILE or verify= at "
                "a PEM bundle of CA certificates.", field="verify") from None
    cert = settings.cert
    if cert is not None:
        parts = (cert,) if isinstance(cert, str) else cert
        try:
            ctx.load_cert_chain(*parts)
        except (ssl.SSLError, OSError) as exc:
            raise InvalidRequestError(f"cert: the client certificate could not be loaded ({exc}). Pass a PEM file "
                                      "with the certificate and its key, or (cert_file, key_file).",
                                      field="cert") from None
    return ctx


def ssl_context(settings: NetworkSettings) -> ssl.SSLContext:
    """The client's ``ssl.SSLContext``: built once (loading a CA bundle costs tens of ms), then shared."""
    cached = settings._cache.get("ssl")
    if cached is None:
        with _lock:
            cached = settings._cache.get("ssl")
            if cached is None:
                cached = settings._cache["ssl"] = _build(settings)
    ctx: ssl.SSLContext = cached
    return ctx

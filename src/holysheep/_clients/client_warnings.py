"""The warnings a client gives when it is built: TLS verification turned off, HTTP/2 asked of plain http."""

from __future__ import annotations

__all__ = ["warn_if_tls_unverified", "warn_plain_http2", "warn_unverified"]


def _tls_contexts(http_client: object) -> list[object]:
    """The SSL contexts of an httpx client's transport and of every transport in its ``mounts``."""
    from holysheep._transports._private_access import httpx_pools, pool_ssl_context  # httpx shows neither

    return [pool_ssl_context(pool) for pool in httpx_pools(http_client)]


def warn_unverified(what: str) -> None:
    import warnings

    from holysheep._core.log import logger

    message = (f"holysheep does not verify TLS certificates ({what}): anyone on the network path can read your "
               "API key. Remove it unless this is a test, or pass verify='/path/to/ca.pem' for a private CA.")
    logger.warning(message)
    warnings.warn(message, stacklevel=4)  # the line that built the client


def warn_plain_http2() -> None:
    import warnings

    from holysheep._core.log import logger

    message = ("http2=True is offered by TLS (ALPN) only: this http:// base_url is sent over HTTP/1.1. Use "
               "https:// for HTTP/2.")
    logger.warning(message)
    warnings.warn(message, stacklevel=3)  # the line that built the client


def warn_if_tls_unverified(http_client: object) -> None:
    """TLS verification is on by default; a custom http_client that turns it off (``verify=False``, on the
    client or on a transport in ``mounts=``, or a context with ``check_hostname=False``) is never silent."""
    import ssl

    weak = None
    for ctx in _tls_contexts(http_client):
        if isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_NONE:
            weak = "does not verify TLS certificates (verify=False)"
            break
        if isinstance(ctx, ssl.SSLContext) and not ctx.check_hostname:
            weak = "does not check the server's host name against its certificate (check_hostname=False)"
    if weak is not None:
        import warnings

        from holysheep._core.log import logger

        message = (f"The http_client passed to holysheep {weak}: anyone on the network path can read your API "
                   "key. Use the default verification unless this is a test.")
        logger.warning(message)
        warnings.warn(message, stacklevel=3)  # the line that built the client

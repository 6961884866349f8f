"""Proxy and certificate settings, resolved once from arguments and the environment (no sockets here).

One policy for every transport (sync httpx, async httpx, aiohttp, the batch, the CLI):

- **Proxies**: ``proxy=URL`` wins; otherwise, with ``trust_env=True`` (the default), ``HTTP_PROXY``,
  ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` (either case) as httpx and curl read them.
- **Trust store**: certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set (``trust_env=True``),
  or ``verify=`` (a CA bundle path, an ``ssl.SSLContext``, or ``False``).
- **Client certificate**: ``cert=`` (a PEM path holding the certificate and key, or ``(cert, key)`` or
  ``(cert, key, password)``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import httpx

from holysheep._exceptions import InvalidRequestError

__all__ = ["CertTypes", "NetworkSettings", "VerifyTypes", "environment_proxies",
           "make_network", "proxy_for", "shown_url"]

CertTypes = Union[str, tuple[str, str], tuple[str, str, str]]
VerifyTypes = Union[bool, str, ssl.SSLContext]


def shown_url(url: str) -> str:
    """A proxy URL as it may be shown: ``user:password@`` becomes ``***@``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return f"{scheme}{sep}{netloc}{slash}{path}"


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_get(env: Mapping[str, str], name: str) -> str:
    """``name`` in lower case wins over upper case (as curl and urllib read them)."""
    value = env.get(name.lower())
    if value is None:
        value = env.get(name.upper())
    return (value or "").strip()


def environment_proxies(env: Mapping[str, str]) -> tuple[tuple[str, str | None], ...]:
    """The proxy routes the environment asks for, as ``(pattern, proxy URL or None)`` in httpx's mount
    syntax (``"https://"``, ``"all://*example.com"``: None means "no proxy"); most specific first."""
    routes: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        value = _env_get(env, f"{scheme}_proxy")
        if value:
            routes[f"{scheme}://"] = value if "://" in value else f"http://{value}"
    for host in (h.strip() for h in _env_get(env, "no_proxy").split(",")):
        if host == "*":
            return ()
        if not host:
            continue
        if "://" in host:
            routes[host] = None
            continue
        bare = host.strip("[]")
        try:
            ip = ipaddress.ip_address(bare.split("/")[0])
        except ValueError:
            ip = None
        if ip is not None and ip.version == 6:
            routes[f"all://[{bare}]"] = None
        elif ip is not None or host.lower() == "localhost":
            routes[f"all://{host}"] = None
        else:
            routes[f"all://*{host}"] = None
    return tuple(sorted(routes.items(), key=lambda kv: _Pattern.of(kv[0]).priority))


@dataclass(frozen=True)
class _Pattern:
    scheme: str
    host: str
    port: int | None
    regex: re.Pattern[str] | None

    @staticmethod
    def of(pattern: str) -> _Pattern:
        cached = _PATTERNS.get(pattern)
        if cached is not None:
            return cached
        scheme, _, rest = pattern.partition("://")
        netloc = rest.split("/", 1)[0]
        host, port = netloc, None
        if netloc.startswith("["):
            host, _, tail = netloc[1:].partition("]")
            port = int(tail[1:]) if tail.startswith(":") and tail[1:].isdigit() else None
        elif netloc.count(":") == 1:
            host, _, p = netloc.partition(":")
            port = int(p) if p.isdigit() else None
        host = host.lower()
        regex: re.Pattern[str] | None
        if not host or host == "*":
            host, regex = "", None
        elif host.startswith("*."):
            regex = re.compile(rf"^.+\.{re.escape(host[2:])}$")
        elif host.startswith("*"):
            regex = re.compile(rf"^(.+\.)?{re.escape(host[1:])}$")
        else:
            regex = re.compile(rf"^{re.escape(host)}$")
        value = _PATTERNS[pattern] = _Pattern("" if scheme == "all" else scheme.lower(), host, port, regex)
        return value

    @property
    def priority(self) -> tuple[int, int, int]:
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))

    def matches(self, url: httpx.URL) -> bool:
        if self.scheme and self.scheme != url.scheme:
            return False
        if self.regex is not None and not self.regex.match(url.host):
            return False
        return self.port is None or self.port == (url.port or (443 if url.scheme == "https" else 80))


_PATTERNS: dict[str, _Pattern] = {}


@dataclass(frozen=True)
class NetworkSettings:
    """A client's proxy and TLS settings (immutable; shared by its copies and its batch's clients)."""

    proxy: str | None = None
    """``proxy=`` as given (it wins over the environment)."""
    trust_env: bool = True
    verify: object = True
    """True (the default store), False, a CA bundle path, or an ``ssl.SSLContext``."""
    cert: CertTypes | None = None
    routes: tuple[tuple[str, str | None], ...] = ()
    """The proxy routes in effect (from ``proxy=`` or the environment), most specific first."""
    cafile: str | None = None
    capath: str | None = None
    ca_source: str = "certifi"
    """Which CA store is trusted, in words (errors quote it)."""
    http2: bool = False
    """Offer HTTP/2 by ALPN on TLS connections (``http2=``; httpx transports only, needs the ``h2`` package)."""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)

    @property
    def uses_proxy(self) -> bool:
        return any(url is not None for _, url in self.routes)

    def __repr__(self) -> str:
        proxy = shown_url(self.proxy) if self.proxy else None
        return f"NetworkSettings(proxy={proxy!r}, trust_env={self.trust_env}, ca={self.ca_source!r})"


DEFAULT_NETWORK_ARGS: dict[str, Any] = {"proxy": None, "trust_env": True, "verify": True, "cert": None,
                                        "http2": False}


def _check_proxy_url(proxy: object) -> str:
    if not isinstance(proxy, str) or not proxy.strip():
        raise InvalidRequestError(f"proxy must be a URL string such as 'http://proxy.example:3128', got "
                                  f"{type(proxy).__name__}.", field="proxy")
    value = proxy.strip()
    if "://" not in value:
        value = f"http://{value}"
    try:
        url = httpx.URL(value)
    except Exception:
        raise InvalidRequestError(f"proxy {shown_url(value)!r} is not a valid URL. Use a URL such as "
                                  "'http://proxy.example:3128'.", field="proxy") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise InvalidRequestError(f"proxy {shown_url(value)!r} needs an http:// or https:// scheme and a host, for "
                                  "example 'http://proxy.example:3128' (SOCKS proxies are not supported).",
                                  field="proxy")
    return value


def _check_cert(cert: object) -> CertTypes | None:
    if cert is None:
        return None
    parts = (cert,) if isinstance(cert, str) else cert
    if not isinstance(parts, tuple) or not 1 <= len(parts) <= 3 or not all(isinstance(p, str) for p in parts):
        raise InvalidRequestError("cert must be a PEM file path (certificate and key), or a tuple (cert_file, "
                                  "key_file) or (cert_file, key_file, password).", field="cert")
    for path in parts[:2]:
        if not os.path.isfile(path):
            raise InvalidRequestError(f"cert: the client certificate file {path!r} does not exist. Pass the path "
                                      "of a PEM file.", field="cert")
    result: CertTypes = cert  # type: ignore[assignment]
    return result


def _ca_from(verify: object, trust_env: bool, env: Mapping[str, str]) -> tuple[str | None, str | None, str]:
    """``(cafile, capath, description)`` of the trust store."""
    if verify is False:
        return None, None, "none (verify=False)"
    if isinstance(verify, ssl.SSLContext):
        return None, None, "the ssl.SSLContext passed as verify="
    if isinstance(verify, str):
        if os.path.isdir(verify):
            return None, verify, f"verify={verify!r}"
        if not os.path.isfile(verify):
            raise InvalidRequestError(f"verify={verify!r}: no such CA bundle file or directory. Pass the path of "
                                      "a PEM bundle, an ssl.SSLContext, or True for the default store.",
                                      field="verify")
        return verify, None, f"verify={verify!r}"
    if verify is not True:
        raise InvalidRequestError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, got "
                                  f"{type(verify).__name__}.", field="verify")
    cafile = capath = None
    described = []
    if trust_env:
        file_value = env.get("SSL_CERT_FILE") or None
        dir_value = env.get("SSL_CERT_DIR") or None
        if file_value is not None:
            if not os.path.isfile(file_value):
                raise InvalidRequestError(
                    f"SSL_CERT_FILE={file_value!r}: no such file. The environment variable SSL_CERT_FILE names "
                    "the CA bundle to trust; fix or unset it, or pass verify=... (trust_env=False ignores it).",
                    field="SSL_CERT_FILE", reason="the CA file named by SSL_CERT_FILE does not exist")
            cafile = file_value
            described.append(f"SSL_CERT_FILE={file_value}")
        if dir_value is not None:
            if not os.path.isdir(dir_value):
                raise InvalidRequestError(
                    f"SSL_CERT_DIR={dir_value!r}: no such directory. The environment variable SSL_CERT_DIR names "
                    "a directory of CA certificates; fix or unset it, or pass verify=... (trust_env=False "
                    "ignores it).", field="SSL_CERT_DIR", reason="the CA directory named by SSL_CERT_DIR does "
                    "not exist")
            capath = dir_value
            described.append(f"SSL_CERT_DIR={dir_value}")
    if described:
        return cafile, capath, " and ".join(described)
    import certifi

    return certifi.where(), None, f"certifi ({certifi.where()})"


def make_network(*, proxy: object = None, trust_env: object = True, verify: object = True, cert: object = None,
                 http2: object = False, env: Mapping[str, str] | None = None) -> NetworkSettings:
    """Validate the network options and resolve the environment (read once, here). Raises
    `InvalidRequestError` naming the option or environment variable."""
    if not isinstance(trust_env, bool):
        raise InvalidRequestError(f"trust_env must be True or False, got {trust_env!r}.", field="trust_env")
    if not isinstance(http2, bool):
        raise InvalidRequestError(f"http2 must be True or False, got {http2!r}.", field="http2")
    environ = os.environ if env is None else env
    if proxy is not None:
        url = _check_proxy_url(proxy)
        routes: tuple[tuple[str, str | None], ...] = (("all://", url),)
    else:
        url = None
        routes = environment_proxies(environ) if trust_env else ()
        for _, value in routes:
            if value is not None:
                try:
                    _check_proxy_url(value)
                except InvalidRequestError as exc:
                    raise InvalidRequestError(f"The proxy in the environment (HTTP_PROXY / HTTPS_PROXY / ALL_PROXY) "
                                              f"is unusable: {exc.message} Fix it, or pass trust_env=False.",
                                              field="HTTPS_PROXY") from None
    cafile, capath, source = _ca_from(verify, trust_env, environ)
    return NetworkSettings(proxy=url, trust_env=trust_env, verify=verify, cert=_check_cert(cert), routes=routes,
                           cafile=cafile, capath=capath, ca_source=source, http2=http2)


DEFAULT_NETWORK = NetworkSettings(ca_source="certifi")
"""Placeholder for configs built by hand (clients always resolve their own)."""


def proxy_for(settings: NetworkSettings, url: httpx.URL) -> str | None:
    """The proxy a request to ``url`` goes through, or None (direct). Loopback hosts (``localhost``,
    127.0.0.0/8, ``::1``) are always reached directly: a proxy elsewhere cannot reach them, and a key must not
    travel to it in clear."""
    routes = settings.routes
    if not routes or _is_loopback(url.host):
        return None
    key = f"{url.scheme}://{url.host}:{url.port}"
    cache = settings._cache
    if key in cache:
        result: str | None = cache[key]
        return result
    found: str | None = None
    for pattern, proxy in routes:
        if _Pattern.of(pattern).matches(url):
            found = proxy
            break
    if len(cache) < 256:
        cache[key] = found
    return found

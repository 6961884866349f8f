"""One trust store and one TLS error on every transport (a TLS server with a CA the tests generate)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest
import trustme

from holysheep import APIConnectionError, APITLSError, Client, InvalidRequestError
from holysheep.testing import FakeServer

from .conftest import TRANSPORTS, TLSFront, one_call, server_context

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_verify_with_a_ca_bundle_path(kind: str, server: FakeServer, tls: TLSFront, ca_file: str) -> None:
    reply = one_call(kind, base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, verify=ca_file)
    assert reply.choices[0].message.content
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_verify_with_an_ssl_context(kind: str, server: FakeServer, tls: TLSFront, ca: trustme.CA) -> None:
    import ssl

    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    one_call(kind, base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, verify=ctx)
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_unknown_ca_is_one_typed_error_naming_the_store(kind: str, server: FakeServer, tls: TLSFront) -> None:
    retries: list[object] = []
    with pytest.raises(APITLSError) as info:
        one_call(kind, base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, max_retries=2,
                 on_retry=lambda *args: retries.append(args))
    err = info.value
    assert isinstance(err, APIConnectionError)
    assert "certificate verify failed" in str(err)
    assert "certifi" in str(err) and "SSL_CERT_FILE" in str(err)
    assert server.api_key not in str(err)
    assert retries == []  # not retried: the same certificate would fail again
    assert server.requests == []


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_client_certificate(kind: str, ca: trustme.CA, server: FakeServer, tmp_path: os.PathLike[str],
                            ca_file: str) -> None:
    cert_file = os.path.join(tmp_path, "client.pem")
    ca.issue_cert("client@example.test").private_key_and_cert_chain_pem.write_to_path(cert_file)
    with TLSFront(server_context(ca, require_client_cert=True), ("127.0.0.1", server.port)) as front:
        base = {"base_url": f"https://127.0.0.1:{front.port}/v1", "api_key": server.api_key, "verify": ca_file}
        one_call(kind, cert=cert_file, **base)
        with pytest.raises(APITLSError) as info:
            one_call(kind, **base)
    assert len(server.requests) == 1
    message = str(info.value)
    assert "alert" in message and "cert=" in message


def _open_client_sockets_to(port: int) -> list[str]:
    """This process's TCP sockets whose remote end is 127.0.0.1:``port`` (read from /proc: a socket closed by
    its owner, or not yet collected, shows the same in Python, but not here)."""
    ours = {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if fd.isdigit()
            and os.path.exists(f"/proc/self/fd/{fd}")}
    inodes = {link[len("socket:["):-1] for link in ours if link.startswith("socket:[")}
    rows = []
    with open("/proc/net/tcp") as table:
        for line in list(table)[1:]:
            fields = line.split()
            if fields[2] == f"0100007F:{port:04X}" and fields[9] in inodes:
                rows.append(line.strip())
    return rows


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_connection_the_server_ends_after_the_handshake_is_closed_without_the_garbage_collector(
        kind: str, ca: trustme.CA, server: FakeServer, ca_file: str) -> None:
    """TLS 1.3 refuses a missing client certificate after the handshake. The client's socket is closed when
    the client is, not left to the garbage collector (Python 3.10's asyncio still calls the wrapper of such a
    connection unclosed when it is collected: tests/conftest.py, ``_PY310_SSL_WRAPPER``)."""
    with TLSFront(server_context(ca, require_client_cert=True), ("127.0.0.1", server.port)) as front:
        gc.disable()
        try:
            with pytest.raises(APITLSError):
                one_call(kind, base_url=f"https://127.0.0.1:{front.port}/v1", api_key=server.api_key,
                         verify=ca_file)
            assert _open_client_sockets_to(front.port) == []
        finally:
            gc.enable()


def test_sync_batch_uses_the_same_trust_store(server: FakeServer, tls: TLSFront, ca_file: str) -> None:
    with Client(base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, verify=ca_file) as client:
        assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        results = client.chat.completions.batch(["a", "b"], model="m")
    assert [r.ok for r in results] == [True, True]
    with Client(base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, max_retries=0) as client:
        failed = client.chat.completions.batch(["a"], model="m")
    assert isinstance(failed[0].error, APITLSError)


def test_verify_false_warns(server: FakeServer, tls: TLSFront) -> None:
    with pytest.warns(UserWarning, match="verify=False"):
        client = Client(base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, verify=False)
    with client:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])


def test_bad_verify_and_cert_are_refused_before_io(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(InvalidRequestError, match="verify"):
        Client(api_key="k", base_url="https://h.example/v1", verify=os.path.join(tmp_path, "missing.pem"))
    with pytest.raises(InvalidRequestError, match="cert"):
        Client(api_key="k", base_url="https://h.example/v1", cert=os.path.join(tmp_path, "missing.pem"))
    with pytest.raises(InvalidRequestError, match="cert"):
        Client(api_key="k", base_url="https://h.example/v1", cert=42)  # type: ignore[arg-type]


# Trust-store cases run in a fresh process: aiohttp (and ssl's default paths) read the environment once.
_SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    from holysheep import AsyncClient, Client, HolySheepError
    base, key, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    msgs = [{"role": "user", "content": "x"}]
    def sync():
        with Client(base_url=base, api_key=key, max_retries=0) as c:
            c.chat.completions.create(model="m", messages=msgs)
    async def run(backend):
        async with AsyncClient(base_url=base, api_key=key, max_retries=0, http_backend=backend) as c:
            await c.chat.completions.create(model="m", messages=msgs)
    def batch():
        with Client(base_url=base, api_key=key, max_retries=0) as c:
            r = c.chat.completions.batch(["a"], model="m")
            if r[0].error is not None:
                raise r[0].error
    try:
        {"sync": sync, "batch": batch}.get(kind, lambda: asyncio.run(run(kind.split("-")[1])))()
        print(json.dumps({"ok": True}))
    except HolySheepError as exc:
        print(json.dumps({"ok": False, "type": type(exc).__name__, "message": str(exc),
                          "field": getattr(exc, "field", None)}))
""")


def _fresh(base: str, key: str, kind: str, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR") and
             not k.lower().endswith("_proxy")}
    out = subprocess.run([sys.executable, "-c", _SCRIPT, base, key, kind], env={**clean, **env},
                         capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("kind", [*TRANSPORTS, "batch"])
def test_trust_store_from_environment_in_a_fresh_process(kind: str, server: FakeServer, tls: TLSFront, ca_file: str,
                                                         tmp_path: os.PathLike[str]) -> None:
    base = f"https://127.0.0.1:{tls.port}/v1"
    default = _fresh(base, server.api_key, kind, {})
    assert default["ok"] is False and default["type"] == "APITLSError" and "certifi" in str(default["message"])
    assert _fresh(base, server.api_key, kind, {"SSL_CERT_FILE": ca_file}) == {"ok": True}
    missing = os.path.join(tmp_path, "gone.pem")
    stale = _fresh(base, server.api_key, kind, {"SSL_CERT_FILE": missing})
    assert stale["type"] == "InvalidRequestError" and stale["field"] == "SSL_CERT_FILE"
    assert missing in str(stale["message"])


def test_ssl_cert_dir_in_a_fresh_process(server: FakeServer, tls: TLSFront, ca: trustme.CA,
                                         tmp_path: os.PathLike[str]) -> None:
    directory = os.path.join(tmp_path, "certs")
    os.mkdir(directory)
    ca.cert_pem.write_to_path(os.path.join(directory, "ca.pem"))
    subprocess.run(["openssl", "rehash", directory], check=True, capture_output=True)
    base = f"https://127.0.0.1:{tls.port}/v1"
    for kind in TRANSPORTS:
        assert _fresh(base, server.api_key, kind, {"SSL_CERT_DIR": directory}) == {"ok": True}, kind


def test_a_custom_http_client_is_named_as_the_store(server: FakeServer, tls: TLSFront) -> None:
    import httpx

    with Client(base_url=f"https://127.0.0.1:{tls.port}/v1", api_key=server.api_key, max_retries=0,
                http_client=httpx.Client()) as client, pytest.raises(APITLSError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    message = str(info.value)
    assert "the CA store in use: the http_client's own" in message and "certifi (" not in message
    assert "SSL_CERT_FILE" not in message  # the SDK's settings do not apply to a client passed in

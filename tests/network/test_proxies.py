"""Proxies from the environment and ``proxy=``, the same on every transport (a real proxy on 127.0.0.1)."""

from __future__ import annotations

import pytest

from holysheep import APIConnectionError, Client
from holysheep.testing import FakeServer

from .conftest import HOST, TRANSPORTS, Proxy, TLSFront, one_call

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_http_proxy_from_environment_forwards(kind: str, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with Proxy({HOST: ("127.0.0.1", server.port)}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        reply = one_call(kind, base_url=f"http://{HOST}:{server.port}/v1", api_key=server.api_key,
                         allow_insecure_http=True)
    assert reply.choices[0].message.content
    assert [(s.method, s.target) for s in proxy.seen] == [("POST", f"http://{HOST}:{server.port}/v1/chat/completions")]
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_https_proxy_from_environment_tunnels(kind: str, server: FakeServer, tls: TLSFront, ca_file: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with Proxy({HOST: ("127.0.0.1", tls.port)}) as proxy:
        monkeypatch.setenv("https_proxy", proxy.url)
        one_call(kind, base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file)
    assert [(s.method, s.target) for s in proxy.seen] == [("CONNECT", f"{HOST}:{tls.port}")]
    assert "authorization" not in proxy.seen[0].headers  # the key only travels inside the tunnel
    assert server.requests[0].headers["authorization"] == f"Bearer {server.api_key}"


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_all_proxy_and_explicit_proxy(kind: str, server: FakeServer, tls: TLSFront, ca_file: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with Proxy({HOST: ("127.0.0.1", tls.port)}) as env_proxy, Proxy({HOST: ("127.0.0.1", tls.port)}) as mine:
        monkeypatch.setenv("ALL_PROXY", env_proxy.url)
        one_call(kind, base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file)
        one_call(kind, base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file,
                 proxy=mine.url)  # proxy= wins over the environment
    assert [s.method for s in env_proxy.seen] == ["CONNECT"]
    assert [s.method for s in mine.seen] == ["CONNECT"]


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_proxy_credentials_are_sent_and_never_shown(kind: str, server: FakeServer, tls: TLSFront, ca_file: str
                                                    ) -> None:
    with Proxy({HOST: ("127.0.0.1", tls.port)}, auth="alice:s3cret-proxy-pw") as proxy:
        url = f"http://alice:s3cret-proxy-pw@127.0.0.1:{proxy.port}"
        one_call(kind, base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file, proxy=url)
        with Proxy({}, auth="alice:other") as refusing:  # 407: the error must not echo the credentials
            bad = f"http://alice:s3cret-proxy-pw@127.0.0.1:{refusing.port}"
            with pytest.raises(APIConnectionError) as info:
                one_call(kind, base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file,
                         proxy=bad)
    assert proxy.seen[0].headers["proxy-authorization"].startswith("Basic ")
    assert "s3cret-proxy-pw" not in str(info.value) and "s3cret-proxy-pw" not in repr(info.value)
    client = Client(api_key=server.api_key, base_url=f"https://{HOST}/v1", proxy=url)
    assert "s3cret-proxy-pw" not in repr(client) and "s3cret-proxy-pw" not in repr(client.config)


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_trust_env_false_and_no_proxy_go_direct(kind: str, server: FakeServer, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    with Proxy({HOST: ("127.0.0.1", server.port)}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        base = {"base_url": f"http://{HOST}:{server.port}/v1", "api_key": server.api_key, "allow_insecure_http": True}
        with pytest.raises(APIConnectionError):  # direct: nobody resolves api.test
            one_call(kind, trust_env=False, **base)
        monkeypatch.setenv("NO_PROXY", f"example.org,{HOST}")
        with pytest.raises(APIConnectionError):
            one_call(kind, **base)
        monkeypatch.setenv("NO_PROXY", "*")
        with pytest.raises(APIConnectionError):
            one_call(kind, **base)
    assert proxy.seen == []


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_loopback_is_never_proxied(kind: str, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key on plain http:// never reaches a proxy: loopback targets are reached directly."""
    with Proxy({}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("ALL_PROXY", proxy.url)
        one_call(kind, base_url=server.url, api_key=server.api_key)
    assert proxy.seen == []
    assert len(server.requests) == 1


def test_bad_proxy_is_refused_before_io(monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="proxy"):
        Client(api_key="k", base_url="https://h.example/v1", proxy="ftp://p:1")
    monkeypatch.setenv("HTTPS_PROXY", "ftp://user:pw-secret@p:1")
    with pytest.raises(InvalidRequestError, match="HTTPS_PROXY") as info:
        Client(api_key="k", base_url="https://h.example/v1")
    assert "pw-secret" not in str(info.value)
    Client(api_key="k", base_url="https://h.example/v1", trust_env=False)  # ignored: fine


def test_sync_batch_goes_through_the_proxy(server: FakeServer, tls: TLSFront, ca_file: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with Proxy({HOST: ("127.0.0.1", tls.port)}) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with Client(base_url=f"https://{HOST}:{tls.port}/v1", api_key=server.api_key, verify=ca_file) as client:
            results = client.chat.completions.batch(["a", "b", "c"], model="m", concurrency=2)
    assert [r.ok for r in results] == [True, True, True]
    assert {s.method for s in proxy.seen} == {"CONNECT"}
    assert sum(r.path == "/v1/chat/completions" for r in server.requests) == 3


def test_cli_honours_environment_and_proxy_flag(server: FakeServer, tls: TLSFront, ca_file: str,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main as run

    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    with Proxy({HOST: ("127.0.0.1", tls.port)}) as env_proxy, Proxy({HOST: ("127.0.0.1", tls.port)}) as flag:
        monkeypatch.setenv("HTTPS_PROXY", env_proxy.url)
        base = ["--api-key", server.api_key, "--base-url", f"https://{HOST}:{tls.port}/v1"]
        assert run(["chat", "hi", "-m", "m", *base]) == 0
        assert run(["chat", "hi", "-m", "m", "--proxy", flag.url, *base]) == 0
    assert [s.method for s in env_proxy.seen] == ["CONNECT"]
    assert [s.method for s in flag.seen] == ["CONNECT"]

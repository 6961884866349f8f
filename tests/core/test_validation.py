"""Bad arguments raise typed errors before the network is touched."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

import holysheep
from holysheep import Client, InsecureTransportError, InvalidAPIKeyError, InvalidRequestError

from .conftest import KEY, MESSAGES

BAD_CREATE: list[tuple[dict[str, Any], str]] = [
    ({"messages": []}, "messages"),
    ({"messages": "Hi"}, "messages"),
    ({"messages": None}, "messages"),
    ({"messages": [{"role": "wizard", "content": "Hi"}]}, "messages[0].role"),
    ({"messages": [{"content": "Hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"text": "no type"}]}]}, "messages[0].content[0]"),
    ({"messages": ["Hi"]}, "messages[0]"),
    ({"temperature": 2.5}, "temperature"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": -5}, "max_tokens"),
    ({"max_tokens": 1.5}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"n": 0}, "n"),
    ({"stop": 5}, "stop"),
    ({"seed": "x"}, "seed"),
    ({"presence_penalty": 3}, "presence_penalty"),
    ({"tools": {"type": "function"}}, "tools"),
    ({"model": ""}, "model"),
    ({"model": None}, "model"),
    ({"timeout": -1}, "timeout"),
    ({"max_retries": -1}, "max_retries"),
    ({"stream_idle_timeout": 0, "stream": True}, "stream_idle_timeout"),
    ({"stream": "yes"}, "stream"),
]


@pytest.mark.parametrize(("overrides", "field"), BAD_CREATE, ids=[f for _, f in BAD_CREATE])
def test_bad_create_arguments_raise_before_io(
    respx_mock: respx.MockRouter, overrides: dict[str, Any], field: str
) -> None:
    route = respx_mock.route().respond(200)
    kwargs: dict[str, Any] = {"model": "deepseek-v3.2", "messages": MESSAGES, **overrides}
    with Client(api_key=KEY) as client, pytest.raises(InvalidRequestError) as info:
        client.chat.completions.create(**kwargs)
    assert info.value.field == field
    assert field.split("[")[0].split(".")[0] in str(info.value)
    assert route.call_count == 0


def test_assistant_message_may_have_null_content(respx_mock: respx.MockRouter) -> None:
    respx_mock.post().respond(200, json={"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]})
    with Client(api_key=KEY) as client:
        msgs = [{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
                                                                        "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "1", "content": "42"}]
        client.chat.completions.create(model="m", messages=msgs)


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [
        ({"base_url": "api.holysheep.ai/v1"}, InvalidRequestError, "scheme"),
        ({"base_url": "ftp://x/v1"}, InvalidRequestError, "scheme"),
        ({"base_url": ""}, InvalidRequestError, "base_url"),
        ({"timeout": -3}, InvalidRequestError, "timeout"),
        ({"timeout": httpx.Timeout(5.0, connect=-1)}, InvalidRequestError, "timeout.connect"),
        ({"max_retries": -1}, InvalidRequestError, "max_retries"),
        ({"max_retries": 1.5}, InvalidRequestError, "max_retries"),
        ({"initial_retry_delay": -1}, InvalidRequestError, "initial_retry_delay"),
        ({"http_client": httpx.AsyncClient()}, InvalidRequestError, "httpx.Client"),
        ({"api_key": "sk-proj-abcdefghijklmnopqrstuvwx"}, InvalidAPIKeyError, "'hs_'"),
        ({"api_key": "hs_short"}, InvalidAPIKeyError, "at least 16"),
        ({"api_key": "hs_has spaces in the key!!"}, InvalidAPIKeyError, "contains whitespace (a space)"),
        ({"api_key": ""}, InvalidAPIKeyError, "HOLYSHEEP_API_KEY"),
        ({"api_key": KEY, "base_url": "http://gpu.example.com/v1"}, InsecureTransportError, "allow_insecure_http"),
    ],
)
def test_bad_client_arguments(monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], exc: type[Exception],
                              needle: str) -> None:
    monkeypatch.delenv("HOLYSHEEP_API_KEY", raising=False)
    monkeypatch.delenv("HOLYSHEEP_BASE_URL", raising=False)
    kwargs.setdefault("api_key", KEY)
    with pytest.raises(exc) as info:
        Client(**kwargs)
    assert needle in str(info.value)


def test_missing_key_names_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLYSHEEP_API_KEY", raising=False)
    monkeypatch.delenv("HOLYSHEEP_BASE_URL", raising=False)
    with pytest.raises(InvalidAPIKeyError, match="HOLYSHEEP_API_KEY"):
        Client()
    with pytest.raises(InvalidAPIKeyError, match="HOLYSHEEP_API_KEY"):
        holysheep.AsyncClient()


def test_bad_key_message_shows_at_most_three_chars() -> None:
    secret = "sk-live-SECRETSECRETSECRET"
    with pytest.raises(InvalidAPIKeyError) as info:
        Client(api_key=secret)
    assert "'sk-'" in str(info.value)
    assert "sk-l" not in str(info.value) and "SECRET" not in str(info.value)


def test_env_vars_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLYSHEEP_API_KEY", KEY)
    monkeypatch.setenv("HOLYSHEEP_BASE_URL", "http://127.0.0.1:9/v1")
    client = Client()
    assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    client.close()


def test_self_hosted_base_url_accepts_any_key_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLYSHEEP_API_KEY", raising=False)
    Client(base_url="http://localhost:8000/v1").close()
    Client(base_url="http://127.0.0.1:8000/v1", api_key="sk-local").close()
    Client(base_url="https://vllm.internal.example/v1", api_key="anything").close()
    Client(base_url="http://gpu.example.com/v1", api_key="x", allow_insecure_http=True).close()
    Client(base_url="http://gpu.example.com/v1").close()  # no key: nothing to leak


def test_no_auth_header_without_key(respx_mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLYSHEEP_API_KEY", raising=False)
    route = respx_mock.get("http://127.0.0.1:8000/v1/models").respond(200, json={"data": []})
    with Client(base_url="http://127.0.0.1:8000/v1") as client:
        assert client.models.list() == []
    assert "authorization" not in route.calls.last.request.headers


def test_custom_http_client_without_tls_verification_warns(caplog: pytest.LogCaptureFixture) -> None:
    http = httpx.Client(verify=False)
    with pytest.warns(UserWarning, match="does not verify TLS") as record:
        Client(api_key=KEY, http_client=http)
    assert record[0].filename == __file__  # points at the caller's line, not into holysheep
    assert any("verify=False" in r.getMessage() for r in caplog.records)
    http.close()
    with httpx.Client() as verified, warnings_as_errors():
        Client(api_key=KEY, http_client=verified)


class warnings_as_errors:
    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)

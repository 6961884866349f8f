"""The key never appears in reprs, exception text, attached request objects, logs or tracebacks."""

from __future__ import annotations

import logging
import traceback
from typing import Any

import httpx
import pytest
import respx

import holysheep
from holysheep import APIConnectionError, AuthenticationError, Client

from .conftest import BASE, KEY, MESSAGES

PIECES = {KEY[i:i + 8] for i in range(len(KEY) - 7)}


def assert_clean(text: str) -> None:
    leaked = [p for p in PIECES if p in text]
    assert not leaked, f"key fragments leaked: {leaked[:3]} in {text[:300]!r}"


def test_client_repr_and_str() -> None:
    client = Client(api_key=KEY)
    assert_clean(repr(client))
    assert_clean(str(client))
    assert_clean(repr(client._config))
    assert repr(client).count("hs_…WXYZ") == 1
    assert_clean(repr(holysheep.AsyncClient(api_key=KEY)))
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(client)


def _collect(err: BaseException) -> list[str]:
    texts = [str(err), repr(err), "".join(traceback.format_exception(err))]
    req = getattr(err, "request", None)
    if req is not None:
        texts += [repr(req), repr(req.headers), str(dict(req.headers)), str(req.headers.get("authorization"))]
    resp = getattr(err, "response", None)
    if resp is not None:
        texts += [repr(resp), repr(resp.request.headers), str(dict(resp.request.headers))]
    texts.append(repr(getattr(err, "body", None)))
    return texts


@pytest.mark.parametrize("status", [401, 500])
def test_status_errors_are_clean_even_when_server_echoes_key(
    respx_mock: respx.MockRouter, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    respx_mock.post(f"{BASE}/chat/completions").respond(
        status, json={"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_api_key"}})
    caplog.set_level(logging.DEBUG, logger="holysheep")
    with Client(api_key=KEY, max_retries=1, initial_retry_delay=0) as client, \
            pytest.raises(holysheep.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES)
    for text in _collect(info.value):
        assert_clean(text)
    for record in caplog.records:
        assert_clean(record.getMessage())
    if status == 401:
        assert isinstance(info.value, AuthenticationError)
        assert "hs_…WXYZ" in str(info.value)


def test_connection_errors_are_clean(respx_mock: respx.MockRouter) -> None:
    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=httpx.ConnectError(f"boom {KEY}"))
    with Client(api_key=KEY, max_retries=0) as client, pytest.raises(APIConnectionError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES)
    for text in _collect(info.value):
        assert_clean(text)
    assert info.value.request is not None
    assert info.value.request.headers["authorization"] == "Bearer hs_...WXYZ"


def test_debug_logging_is_clean(respx_mock: respx.MockRouter, caplog: pytest.LogCaptureFixture) -> None:
    respx_mock.post(f"{BASE}/chat/completions").mock(side_effect=[httpx.Response(503), httpx.Response(429)])
    caplog.set_level(logging.DEBUG)
    logging.getLogger("holysheep").info("user logs a key by mistake: %s", KEY)
    with Client(api_key=KEY, max_retries=1, initial_retry_delay=0) as client, pytest.raises(holysheep.RateLimitError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "retrying" in text
    assert_clean(text)


def test_invalid_key_error_is_clean() -> None:
    bad = "hs_" + "x" * 10 + "!!SECRETPART"
    with pytest.raises(holysheep.InvalidAPIKeyError) as info:
        Client(api_key=bad)
    tb: Any = "".join(traceback.format_exception(info.value))
    assert "SECRETPART" not in tb and "xxxxxxxx" not in tb

"""A timeout of 0 (or less) is refused before any I/O, wherever it is given (issue 17 item 2)."""

from __future__ import annotations

import httpx
import pytest
import respx

from holysheep import AsyncClient, Client, InvalidRequestError

from .conftest import BASE, KEY, MESSAGES

BAD = [0, 0.0, -1, float("nan"), httpx.Timeout(0), httpx.Timeout(5.0, connect=0.0), httpx.Timeout(5.0, read=-1)]


@pytest.mark.parametrize("timeout", BAD, ids=repr)
def test_client_refuses_non_positive_timeout(timeout: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"must be > 0 seconds") as info:
        Client(api_key=KEY, timeout=timeout)  # type: ignore[arg-type]
    assert info.value.field == "timeout"


@pytest.mark.parametrize("timeout", [0, -0.5])
def test_async_client_refuses_non_positive_timeout(timeout: float) -> None:
    with pytest.raises(InvalidRequestError, match=r"timeout must be > 0 seconds, got"):
        AsyncClient(api_key=KEY, timeout=timeout)


def test_with_options_refuses_zero_and_keeps_none() -> None:
    client = Client(api_key=KEY)
    with pytest.raises(InvalidRequestError, match=r"> 0 seconds"):
        client.with_options(timeout=0)
    assert client.with_options(timeout=None).timeout.read is None
    assert client.with_options(timeout=0.25).timeout.read == 0.25


@respx.mock(assert_all_called=False)
def test_per_call_zero_timeout_sends_nothing(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(500))
    with Client(api_key=KEY) as client, pytest.raises(InvalidRequestError, match=r"timeout must be > 0"):
        client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES, timeout=0)  # type: ignore[arg-type]
    assert route.call_count == 0


async def test_async_per_call_zero_timeout_sends_nothing() -> None:
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(500))
        async with AsyncClient(api_key=KEY, http_backend="httpx") as client:
            with pytest.raises(InvalidRequestError, match=r"timeout must be > 0"):
                await client.chat.completions.create(model="deepseek-v3.2", messages=MESSAGES,  # type: ignore[arg-type]
                                                     timeout=0)
        assert route.call_count == 0

"""Client and AsyncClient take their settings through one signature (``BaseClient.__init__`` with
``ClientOptions``): the same parameters, positions and defaults, and the same checks."""

from __future__ import annotations

import inspect
import typing

import httpx
import pytest

from holysheep import AsyncClient, Client, ClientOptions, InvalidRequestError
from holysheep._clients.base_client import BaseClient

KEY = "hs_" + "a" * 32


def test_one_init_serves_both_clients() -> None:
    assert Client.__init__ is BaseClient.__init__
    assert AsyncClient.__init__ is BaseClient.__init__
    params = list(inspect.signature(Client).parameters)
    assert params == ["api_key", "base_url", "timeout", "max_retries", "default_headers", "http_client", "options"]
    assert inspect.signature(Client).parameters["max_retries"].default == 2


def test_options_name_every_keyword_the_clients_took() -> None:
    hints = typing.get_type_hints(ClientOptions)
    assert sorted(hints) == sorted([
        "initial_retry_delay", "max_retry_delay", "max_retry_after", "stream_idle_timeout", "allow_insecure_http",
        "on_retry", "fallbacks", "circuit_breaker", "max_response_bytes", "max_sse_event_bytes", "http_backend",
        "max_stream_text_bytes", "tool_threads",
        "hooks",
        "cache",
        "proxy", "trust_env", "verify", "cert", "http2", "default_query",
        "max_cost_usd", "prices",
    ])
    assert ClientOptions.__required_keys__ == frozenset()


def test_positional_arguments_still_bind_in_order() -> None:
    client = Client(KEY, "http://127.0.0.1:9/v1", 7.0, 5)
    assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    assert client.timeout.read == 7.0 and client.max_retries == 5
    assert client.config.api_key.reveal() == KEY


def test_defaults_of_the_keyword_options() -> None:
    config = Client(api_key=KEY).config
    assert (config.initial_retry_delay, config.max_retry_delay, config.max_retry_after) == (0.5, 8.0, 60.0)
    assert config.stream_idle_timeout == 300.0 and config.allow_insecure_http is False and config.on_retry is None


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_a_misspelt_option_is_a_type_error_with_a_hint(cls: type[Client] | type[AsyncClient]) -> None:
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'max_retry_dealy'; did you mean "
                                        r"'max_retry_delay'\?") as info:
        cls(api_key=KEY, max_retry_dealy=3.0)  # type: ignore[call-arg]
    assert info.value.args[0].startswith(f"{cls.__name__}()")


def test_sync_client_sends_with_httpx_only() -> None:
    assert isinstance(Client(api_key=KEY, http_backend="httpx"), Client)
    with pytest.raises(InvalidRequestError, match="http_backend") as info:
        Client(api_key=KEY, http_backend="aiohttp")  # type: ignore[arg-type]
    assert info.value.field == "http_backend"


async def test_async_client_picks_its_backend() -> None:
    from holysheep._transports.aiohttp_backend import AiohttpBackend
    from holysheep._transports.backends import AsyncHttpxBackend

    async with AsyncClient(api_key=KEY) as default, AsyncClient(api_key=KEY, http_backend="httpx") as plain:
        assert isinstance(default._backend, AiohttpBackend)
        assert isinstance(plain._backend, AsyncHttpxBackend)
        async with httpx.AsyncClient() as own, AsyncClient(api_key=KEY, http_client=own) as given:
            assert isinstance(given._backend, AsyncHttpxBackend) and given._http is own


@pytest.mark.parametrize(("cls", "wrong"), [(Client, httpx.AsyncClient), (AsyncClient, httpx.Client)])
def test_http_client_of_the_other_kind_is_refused(cls: type[Client] | type[AsyncClient], wrong: type) -> None:
    with pytest.raises(InvalidRequestError, match=r"http_client must be an httpx\.") as info:
        cls(api_key=KEY, http_client=wrong())
    assert info.value.field == "http_client"


def test_a_user_subclass_keeps_the_parents_settings() -> None:
    class Mine(AsyncClient):
        pass

    with pytest.raises(InvalidRequestError, match=r"http_client must be an httpx\.AsyncClient"):
        Mine(api_key=KEY, http_client=httpx.Client())
    assert Mine._http_backends == ("aiohttp", "httpx")


async def test_with_blocks_close_through_the_one_close_method() -> None:
    closed: list[str] = []

    class Sync(Client):
        def close(self) -> None:
            closed.append("sync")
            super().close()

    class Async(AsyncClient):
        async def aclose(self) -> None:  # `async with` and `close()` both reach an overridden aclose
            closed.append("async")
            await super().aclose()

    with Sync(api_key=KEY) as sync:
        assert isinstance(sync, Sync)
    async with Async(api_key=KEY) as client:
        assert isinstance(client, Async)
    await Async(api_key=KEY).close()
    assert closed == ["sync", "async", "async"]


def test_help_names_every_keyword_option() -> None:
    """``help(Client)`` shows the shared ``__init__`` docstring: every option of ``ClientOptions`` is named there."""
    doc = BaseClient.__init__.__doc__ or ""
    for name in ClientOptions.__optional_keys__:
        assert f"``{name}" in doc, name

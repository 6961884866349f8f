"""What openai users type, on holysheep (#44): openai's ``omit``/``NOT_GIVEN`` sentinels (and holysheep's own)
count as not passed; ``AsyncClient``'s request methods are coroutine functions; ``OpenAI``/``AsyncOpenAI``,
``OpenAIError``, ``DefaultAioHttpClient``/``DefaultHttpx2Client``; the module-level client; retries logged in
openai's words."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

import holysheep
from holysheep import AsyncClient, Client, InvalidRequestError
from holysheep._clients.module_client import close_module_client
from holysheep._core.sentinels import is_not_given
from holysheep.testing import FakeServer, Fault, auto_reply

MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]
SENTINELS = [openai.omit, openai.NOT_GIVEN, openai.not_given, holysheep.omit, holysheep.NOT_GIVEN]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(reply=auto_reply()) as srv:
        yield srv


@pytest.fixture
def client(server: FakeServer) -> Iterator[Client]:
    server.reset()
    with Client(api_key=server.api_key, base_url=server.url, max_retries=0) as c:
        yield c


@pytest.mark.parametrize("sentinel", SENTINELS, ids=["omit", "NOT_GIVEN", "not_given", "hs.omit", "hs.NOT_GIVEN"])
def test_every_create_parameter_takes_the_sentinels(client: Client, server: FakeServer, sentinel: object) -> None:
    with openai.OpenAI(api_key=server.api_key, base_url=server.url, max_retries=0) as theirs:
        theirs.chat.completions.create(model="m", messages=MESSAGES, stream=openai.omit, temperature=openai.omit,
                                       tools=openai.omit, tool_choice=openai.omit, max_tokens=openai.omit,
                                       response_format=openai.omit, timeout=openai.NOT_GIVEN)
    completion = client.chat.completions.create(
        model="m", messages=MESSAGES, stream=sentinel, temperature=sentinel, tools=sentinel,  # type: ignore[arg-type]
        tool_choice=sentinel, max_tokens=sentinel, response_format=sentinel, extra_headers=sentinel,
        extra_body=sentinel, timeout=sentinel, max_retries=sentinel)
    assert completion.choices[0].message.content == "Hi"
    sent_by_openai, ours = server.requests[-2:]
    assert ours.body == sent_by_openai.body == {"model": "m", "messages": MESSAGES}


def test_sentinels_in_the_other_methods(client: Client, server: FakeServer) -> None:
    omit = openai.omit
    client.chat.completions.parse(model="m", messages=MESSAGES, response_format={"type": "json_object"},
                                  stream=omit, max_repairs=omit, on_refusal=omit, temperature=omit)  # type: ignore[arg-type]
    with client.chat.completions.stream(model="m", messages=MESSAGES, response_format=omit, seed=omit) as stream:
        assert stream.get_final_completion().choices[0].message.content == "Hi"
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    client.chat.completions.run_tools(model="m", messages=MESSAGES, tools=[get_weather], max_turns=omit,
                                      tool_timeout=omit, temperature=omit)  # type: ignore[arg-type]
    client.embeddings.create(model="e", input="x", dimensions=omit, encoding_format=omit, user=omit,
                             extra_body=omit, timeout=openai.NOT_GIVEN)  # type: ignore[arg-type]
    client.models.list(extra_query=omit, timeout=openai.NOT_GIVEN)  # type: ignore[arg-type]
    client.models.retrieve("gpt-4.1", extra_body=omit)  # type: ignore[arg-type]
    copy = client.with_options(timeout=openai.NOT_GIVEN, max_retries=omit)  # type: ignore[arg-type]
    assert copy.max_retries == 0 and copy.timeout == client.timeout
    bodies = [(r.path, r.body) for r in server.requests]
    assert bodies[0][1]["response_format"] == {"type": "json_object"} and "temperature" not in bodies[0][1]
    assert bodies[1][1] == {"model": "m", "messages": MESSAGES, "stream": True}
    assert set(bodies[2][1]) == set(bodies[3][1]) == {"model", "messages", "tools"}  # a tool call, then the answer
    assert bodies[4][1]["input"] == "x" and set(bodies[4][1]) == {"model", "input", "encoding_format"}
    assert [p for p, _ in bodies[5:]] == ["/v1/models", "/v1/models/gpt-4.1"] and bodies[6][1] is None
    with Client(api_key=server.api_key, base_url=server.url, timeout=openai.NOT_GIVEN,  # type: ignore[arg-type]
                max_retries=omit, default_headers=omit) as c:  # type: ignore[arg-type]
        assert c.max_retries == 2 and c.timeout.read == 600.0


def test_async_create_takes_the_sentinels(server: FakeServer) -> None:
    async def main() -> str | None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url) as c:
            stream = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True,
                                                     temperature=openai.omit)  # type: ignore[arg-type]
            text = "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])
            done = await c.chat.completions.create(model="m", messages=MESSAGES, stream=openai.omit)  # type: ignore[call-overload]
            return text + "/" + (done.choices[0].message.content or "")

    assert asyncio.run(main()) == "Hi/Hi"


def test_sentinels_are_known_by_class_name_and_module_without_importing_openai() -> None:
    fake_omit = type("Omit", (), {"__module__": "openai._types"})()
    fake_given = type("NotGiven", (), {"__module__": "openai"})()
    elsewhere = type("Omit", (), {"__module__": "mylib.types"})()
    assert is_not_given(fake_omit) and is_not_given(fake_given) and not is_not_given(elsewhere)
    assert not is_not_given(None) and not is_not_given(0) and not is_not_given("")
    with pytest.raises(InvalidRequestError, match=r"stream must be True or False, got <mylib\.types\.Omit"):
        Client(api_key="hs_" + "a" * 29).chat.completions.create(model="m", messages=MESSAGES, stream=elsewhere)  # type: ignore[call-overload]
    code = ("import sys, holysheep\nfrom holysheep._core.sentinels import is_not_given\n"
            "assert is_not_given(type('Omit', (), {'__module__': 'openai._types'})())\n"
            "assert not any(m == 'openai' or m.startswith('openai.') for m in sys.modules)\nprint('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout == "ok\n", done.stderr
    assert repr(holysheep.NOT_GIVEN) == "NOT_GIVEN" and not holysheep.NOT_GIVEN and not holysheep.omit


def test_async_request_methods_are_coroutine_functions() -> None:
    c = AsyncClient(api_key="hs_" + "a" * 29)
    for method in (c.chat.completions.create, c.chat.completions.parse, c.chat.completions.run_tools,
                   c.embeddings.create, c.models.retrieve, c.quota.retrieve, c.beta.chat.completions.parse,
                   c.post, c.get):
        assert inspect.iscoroutinefunction(method), method
    assert not inspect.iscoroutinefunction(c.models.list)  # openai's returns an AsyncPaginator, as this one
    assert list(inspect.signature(c.chat.completions.create).parameters) == ["model", "messages", "stream", "params"]
    sync = Client(api_key="hs_" + "a" * 29)
    assert not inspect.iscoroutinefunction(sync.chat.completions.create)
    sync.close()


def test_openai_names() -> None:
    assert holysheep.OpenAI is Client and holysheep.AsyncOpenAI is AsyncClient
    assert issubclass(holysheep.APIError, holysheep.OpenAIError) and holysheep.OpenAIError is holysheep.HolySheepError
    with pytest.raises(holysheep.OpenAIError):
        holysheep.OpenAI(api_key="hs_" + "a" * 29, base_url="http://127.0.0.1:9/v1", max_retries=0).models.list()


def test_default_aiohttp_client_sends_with_aiohttp(server: FakeServer) -> None:
    async def main() -> tuple[str, str, str | None]:
        async with AsyncClient(api_key=server.api_key, base_url=server.url,
                               http_client=holysheep.DefaultAioHttpClient()) as ours, \
                openai.DefaultAioHttpClient() as theirs, \
                AsyncClient(api_key=server.api_key, base_url=server.url, http_client=theirs) as via_openais:
            done = await ours.chat.completions.create(model="m", messages=MESSAGES)
            other = await via_openais.chat.completions.create(model="m", messages=MESSAGES)
            return type(ours._backend).__name__, str(other.choices[0].message.content), done.choices[0].message.content

    assert asyncio.run(main()) == ("AiohttpBackend", "Hi", "Hi")
    with pytest.raises(InvalidRequestError, match="DefaultAioHttpClient\\(\\) is for AsyncClient"):
        Client(api_key=server.api_key, http_client=holysheep.DefaultAioHttpClient())  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="takes no arguments, got proxy="):
        holysheep.DefaultAioHttpClient(proxy="http://x")


def test_default_httpx2_client_is_sent_through(server: FakeServer) -> None:
    seen: list[str] = []
    http = holysheep.DefaultHttpx2Client(event_hooks={"request": [lambda r: seen.append(str(r.url))]})
    assert isinstance(http, httpx2.Client) and http.timeout.read == 600.0 and http.timeout.connect == 5.0
    with http, Client(api_key=server.api_key, base_url=server.url, http_client=http) as c:
        c.models.retrieve("gpt-4.1")
    assert seen == [server.url + "/models/gpt-4.1"]
    with holysheep.DefaultHttpxClient() as plain:
        assert plain.timeout.read == 600.0


@pytest.fixture
def module_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    close_module_client()
    for name in ("api_key", "base_url", "timeout", "max_retries", "default_headers", "default_query", "http_client"):
        monkeypatch.setattr(holysheep, name, None)
    yield
    close_module_client()


@pytest.mark.usefixtures("module_settings")
def test_module_level_client(server: FakeServer) -> None:
    server.reset()
    holysheep.api_key, holysheep.base_url = server.api_key, server.url
    completion = holysheep.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "Hi" and holysheep.models.list().data
    first = holysheep.chat.completions._client
    holysheep.max_retries, holysheep.default_headers = 0, {"x-team": "a"}
    assert holysheep.chat.completions._client is not first and holysheep.chat.completions._client.max_retries == 0
    holysheep.embeddings.create(model="e", input="x")
    assert holysheep.embeddings._client is holysheep.chat.completions._client  # one client per settings
    assert holysheep.embeddings._client._backend is first._backend  # the copies share the pool
    assert server.requests[-1].headers["x-team"] == "a" and "x-team" not in server.requests[0].headers
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        holysheep.nothing  # noqa: B018


def test_module_level_client_from_the_environment(server: FakeServer) -> None:
    code = ("import sys, holysheep\nassert 'holysheep._clients.module_client' not in sys.modules\n"
            "print(holysheep.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'env'}])"
            ".choices[0].message.content)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOLYSHEEP_", "OPENAI_"))}
    env |= {"HOLYSHEEP_API_KEY": server.api_key, "HOLYSHEEP_BASE_URL": server.url,
            "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout == "env\n", done.stderr


_RETRY = re.compile(r"Retrying request in ([0-9.]+) seconds \(retry (\d) of (\d)\)")


def test_retries_are_logged_as_openai_logs_them(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openai._base_client")
    caplog.set_level(logging.INFO, logger="holysheep._base_client")
    logged: dict[str, list[tuple[str, str]]] = {}
    for name, cls in (("openai", openai.OpenAI), ("holysheep", holysheep.OpenAI)):
        caplog.clear()
        server.set_faults([Fault.status(429, retry_after=0.01), Fault.status(503, retry_after=0.02), None])
        try:
            with cls(api_key=server.api_key, base_url=server.url) as c:
                c.chat.completions.create(model="m", messages=MESSAGES)
        finally:
            server.set_faults(None)
        logged[name] = [(r.name, r.getMessage()) for r in caplog.records if r.levelno == logging.INFO
                        and r.name.endswith("._base_client")]
    assert [m for _, m in logged["holysheep"]] == [m for _, m in logged["openai"]] == [
        "Retrying request in 0.010000 seconds (retry 1 of 2)", "Retrying request in 0.020000 seconds (retry 2 of 2)"]
    assert {n for n, _ in logged["holysheep"]} == {"holysheep._base_client"}


@pytest.mark.parametrize("variable", ["OPENAI_LOG", "HOLYSHEEP_LOG"])
def test_openai_log_or_holysheep_log_turns_on_the_retry_log(variable: str) -> None:
    code = ("import sys, holysheep\nc = holysheep.Client(api_key=sys.argv[1], base_url=sys.argv[2])\n"
            "c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'Hi'}])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOLYSHEEP_", "OPENAI_"))}
    env |= {variable: "info", "PYTHONPATH": os.pathsep.join(sys.path)}
    with FakeServer(reply=auto_reply()) as srv:
        srv.set_faults([Fault.status(503, retry_after=0.01), None])
        done = subprocess.run([sys.executable, "-c", code, srv.api_key, srv.url], capture_output=True, text=True,
                              timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "Retrying request" in line]
    assert len(lines) == 1 and "holysheep._base_client INFO] Retrying request in 0.010000 seconds (retry 1 of 2)" \
        in lines[0], done.stderr

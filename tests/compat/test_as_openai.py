"""``Client.as_openai()`` / ``AsyncClient.as_openai()``: a genuine openai client whose every request goes through
holysheep (its key and headers, retries, hooks, streams), against the local test server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Any

import httpx
import openai
import pytest

import holysheep
from holysheep.hooks import Hooks
from holysheep.testing import FakeServer, Fault

MSG = [{"role": "user", "content": "hello there"}]


class Recorder(Hooks):
    """Every call's path and how each attempt ended."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_request(self, event: Any) -> None:
        self.events.append(("request", event.ctx.path))

    def on_response(self, event: Any) -> None:
        self.events.append(("response", event.outcome))


def test_as_openai_is_a_genuine_openai_client_with_its_retries_off() -> None:
    client = holysheep.Client(api_key="hs_" + "k" * 24, base_url="http://127.0.0.1:9/v1")
    oa = client.as_openai()
    assert type(oa) is openai.OpenAI
    assert oa.max_retries == 0
    assert str(oa.base_url) == "http://127.0.0.1:9/v1/"
    assert "hs_" not in oa.api_key  # the key stays in holysheep, which writes the Authorization header
    aoa = holysheep.AsyncClient(api_key="hs_" + "k" * 24, base_url="http://127.0.0.1:9/v1").as_openai()
    assert type(aoa) is openai.AsyncOpenAI
    assert aoa.max_retries == 0


def test_requests_carry_holysheeps_key_and_headers_and_reach_its_hooks() -> None:
    hooks = Recorder()
    with FakeServer() as server, holysheep.Client(api_key=server.api_key, base_url=server.url,
                                                  hooks=[hooks]) as client:
        oa = client.as_openai()
        reply = oa.chat.completions.create(model="gpt-4.1", messages=MSG, extra_headers={"x-trace": "t-1"})
        assert type(reply) is openai.types.chat.ChatCompletion
        assert reply.choices[0].message.content == "hello there"
        assert [m.id for m in oa.models.list().data][:1] == [next(iter(server.models))]
        [chat, models] = server.requests
    assert (chat.method, chat.path, models.method, models.path) == ("POST", "/v1/chat/completions", "GET", "/v1/models")
    assert chat.headers["authorization"] == f"Bearer {server.api_key}"
    assert chat.headers["user-agent"].startswith("holysheep-python/")
    assert chat.headers["x-holysheep-retry-count"] == "0"
    assert chat.headers["idempotency-key"].startswith("hs-")
    assert chat.headers["x-trace"] == "t-1"  # what the caller added travels
    assert not [name for name in chat.headers if name.startswith("x-stainless")]
    assert chat.body == {"model": "gpt-4.1", "messages": MSG}
    assert hooks.events == [("request", "chat/completions"), ("response", "success"),
                            ("request", "models"), ("response", "success")]


def test_holysheep_retries_and_openai_does_not() -> None:
    with FakeServer(faults=[Fault.status(503), Fault.status(503)]) as server, \
            holysheep.Client(api_key=server.api_key, base_url=server.url, initial_retry_delay=0.0,
                             max_retry_delay=0.0) as client:
        reply = client.as_openai().chat.completions.create(model="gpt-4.1", messages=MSG)
        assert reply.choices[0].message.content == "hello there"
        sent = server.requests
    assert [r.status for r in sent] == [503, 503, 200]
    assert [r.headers["x-holysheep-retry-count"] for r in sent] == ["0", "1", "2"]
    assert len({r.headers["idempotency-key"] for r in sent}) == 1  # one logical call


def test_a_final_error_status_is_openais_typed_error_after_holysheeps_retries_only() -> None:
    with FakeServer(faults=[Fault.status(503)] * 3) as server, \
            holysheep.Client(api_key=server.api_key, base_url=server.url, max_retries=1, initial_retry_delay=0.0,
                             max_retry_delay=0.0) as client:
        with pytest.raises(openai.InternalServerError) as info:
            client.as_openai().chat.completions.create(model="gpt-4.1", messages=MSG)
        assert info.value.status_code == 503
        assert len(server.requests) == 2  # holysheep's first attempt and its one retry; openai added none
        server.set_faults([Fault.unauthorized()])
        with pytest.raises(openai.AuthenticationError):
            client.as_openai().chat.completions.create(model="gpt-4.1", messages=MSG)
        assert len(server.requests) == 3  # a 401 is not retried


def test_a_request_for_another_origin_or_a_file_upload_is_refused_before_any_io() -> None:
    with FakeServer() as server, holysheep.Client(api_key=server.api_key, base_url=server.url) as client:
        oa = client.as_openai()
        # openai 3 lets a transport's own error through; openai 1 and 2 wrap it in APIConnectionError
        with pytest.raises((holysheep.InvalidRequestError, openai.APIConnectionError)) as info:
            oa.get("http://127.0.0.2:9/v1/models", cast_to=httpx.Response)
        assert "sends only to its client's base URL" in str(_holysheeps(info.value))
        with pytest.raises((holysheep.InvalidRequestError, openai.APIConnectionError)) as info:
            oa.files.create(file=("a.jsonl", b"{}\n"), purpose="batch")
        assert "JSON requests only" in str(_holysheeps(info.value))
        assert server.requests == []


def _holysheeps(error: BaseException) -> BaseException:
    return error if isinstance(error, holysheep.InvalidRequestError) else error.__cause__  # type: ignore[return-value]


def _gated_server() -> tuple[FakeServer, threading.Event, list[bool]]:
    """A server that sends a stream's first content event, then waits until the test has seen it (or 5 s)."""
    gate = threading.Event()
    released: list[bool] = []

    async def sleep(_: float) -> None:
        released.append(await asyncio.to_thread(gate.wait, 5.0))

    return FakeServer(stream_chunk_delay=0.001, sleep=sleep), gate, released


def test_a_stream_streams_through_holysheep() -> None:
    server, gate, released = _gated_server()
    hooks = Recorder()
    with server, holysheep.Client(api_key=server.api_key, base_url=server.url, hooks=[hooks]) as client:
        texts = []
        for chunk in client.as_openai().chat.completions.create(model="gpt-4.1", messages=MSG, stream=True):
            assert type(chunk) is openai.types.chat.ChatCompletionChunk
            if chunk.choices and chunk.choices[0].delta.content:
                texts.append(chunk.choices[0].delta.content)
                gate.set()  # the first event arrived while the server still holds the rest
    assert "".join(texts) == "hello there"
    assert released and all(released)  # never the 5 s timeout: nothing was buffered
    assert hooks.events == [("request", "chat/completions"), ("response", "success")]


async def test_async_client_on_both_backends_streams_and_reports() -> None:
    for backend in ("aiohttp", "httpx"):
        server, gate, released = _gated_server()
        hooks = Recorder()
        with server:
            async with holysheep.AsyncClient(api_key=server.api_key, base_url=server.url, hooks=[hooks],
                                             http_backend=backend) as client:
                oa = client.as_openai()
                reply = await oa.chat.completions.create(model="gpt-4.1", messages=MSG)
                assert reply.choices[0].message.content == "hello there"
                texts = []
                async for chunk in await oa.chat.completions.create(model="gpt-4.1", messages=MSG, stream=True):
                    if chunk.choices and chunk.choices[0].delta.content:
                        texts.append(chunk.choices[0].delta.content)
                        gate.set()
                assert "".join(texts) == "hello there"
                embedded = await oa.embeddings.create(model="text-embedding-3-small", input="hi")
                assert len(embedded.data) == 1
            assert released and all(released), backend
            assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {server.api_key}"] * 3
            assert hooks.events == [("request", "chat/completions"), ("response", "success")] * 2 + [
                ("request", "embeddings"), ("response", "success")]


def test_responses_api_goes_through_holysheep_too() -> None:
    hooks = Recorder()
    with FakeServer() as server, holysheep.Client(api_key=server.api_key, base_url=server.url,
                                                  hooks=[hooks]) as client:
        oa = client.as_openai()
        assert oa.responses.create(model="gpt-4.1", input="hello there").output_text == "hello there"
        with oa.responses.stream(model="gpt-4.1", input="hello there") as stream:
            events = [event.type for event in stream]
            assert stream.get_final_response().output_text == "hello there"
        assert events[0] == "response.created" and events[-1] == "response.completed"
        assert [r.path for r in server.requests] == ["/v1/responses"] * 2
    assert hooks.events == [("request", "responses"), ("response", "success")] * 2


def test_missing_openai_is_a_typed_error_naming_the_extra() -> None:
    code = ("import sys; sys.modules['openai'] = None\n"
            "import holysheep\n"
            "from holysheep.batch import MissingExtraError\n"
            "try:\n"
            "    holysheep.Client(api_key='hs_' + 'k' * 24).as_openai()\n"
            "except MissingExtraError as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ("MissingExtraError as_openai() needs openai-python, which is not installed: "
                                  "pip install 'holysheep[openai]'.")


def test_openai_requests_get_holysheeps_genai_spans() -> None:
    from tests.observability.otel_util import instrumented

    with FakeServer() as server, instrumented() as telemetry, \
            holysheep.Client(api_key=server.api_key, base_url=server.url) as client:
        oa = client.as_openai()
        usages = [oa.chat.completions.create(model="gpt-4.1", messages=MSG).usage]
        usages += [chunk.usage for chunk in oa.chat.completions.create(
            model="gpt-4.1", messages=MSG, stream=True, stream_options={"include_usage": True}) if chunk.usage]
    spans = telemetry.spans()
    assert len(spans) == len(usages) == 2
    for span, usage in zip(spans, usages, strict=True):
        assert span.name == "chat gpt-4.1"
        assert usage is not None and usage.prompt_tokens > 0
        assert span.attributes["gen_ai.usage.input_tokens"] == usage.prompt_tokens
        assert span.attributes["gen_ai.usage.output_tokens"] == usage.completion_tokens
    assert "traceparent" in server.requests[0].headers  # the span's context went out with the request

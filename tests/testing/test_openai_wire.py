"""Wire fidelity: the official ``openai`` client talks to FakeServer (dev-only; skipped without openai)."""

from __future__ import annotations

import pytest

from holysheep.testing import FakeServer, Fault

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

MESSAGES = [{"role": "user", "content": "hello from openai"}]


def make_client(server: FakeServer, **kwargs: object):  # type: ignore[no-untyped-def]
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 5.0)
    return openai.OpenAI(base_url=server.url, api_key=server.api_key, **kwargs)


def test_json_completion_parses() -> None:
    with FakeServer() as server, make_client(server) as client:
        raw = client.chat.completions.with_raw_response.create(model="deepseek-v3.2", messages=MESSAGES)
        completion = raw.parse()
    assert completion.choices[0].message.content == "hello from openai"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "deepseek-v3.2"
    assert completion.usage is not None and completion.usage.completion_tokens == 3
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + 3
    assert completion._request_id == raw.headers["x-request-id"] == server.requests[0].request_id
    assert server.requests[0].body == {"model": "deepseek-v3.2", "messages": MESSAGES}
    assert server.requests[0].headers["authorization"] == f"Bearer {server.api_key}"


def test_streaming_with_include_usage() -> None:
    with FakeServer(reply="one two three") as server, make_client(server) as client:
        stream = client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_models_list_and_retrieve() -> None:
    with FakeServer() as server, make_client(server) as client:
        ids = [m.id for m in client.models.list()]
        assert "deepseek-v3.2" in ids
        assert client.models.retrieve("deepseek-v3.2").owned_by == "deepseek"
        with pytest.raises(openai.NotFoundError) as info:
            client.models.retrieve("no-such-model")
    assert info.value.code == "model_not_found"


def test_wrong_key_is_authentication_error() -> None:
    with (
        FakeServer() as server,
        openai.OpenAI(
            base_url=server.url, api_key="hs_test_wrongwrongwrongwrongwron", max_retries=0, timeout=5
        ) as client,
        pytest.raises(openai.AuthenticationError) as info,
    ):
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.status_code == 401
    assert info.value.type == "invalid_api_key"
    assert info.value.request_id is not None and info.value.request_id.startswith("req_")


def test_unknown_path_is_not_found_error() -> None:
    with FakeServer() as server, make_client(server) as client, pytest.raises(openai.NotFoundError) as info:
        client.get("/no/such/path", cast_to=object)
    assert info.value.status_code == 404
    assert info.value.type == "invalid_request_error"


def test_rate_limit_error_and_retry_after_is_honoured() -> None:
    with FakeServer(faults=[Fault.status(429, retry_after=0.01)]) as server, make_client(server) as client:
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert info.value.code == "rate_limit_exceeded"
        server.set_faults([Fault.status(429, retry_after=0.01), Fault.status(500)])
        completion = client.with_options(max_retries=2).chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "hello from openai"
    assert [r.status for r in server.requests] == [429, 429, 500, 200]


def test_in_stream_error_event_raises_api_error() -> None:
    with (
        FakeServer(faults=[Fault.stream_error("boom", after_events=2)]) as server,
        make_client(server) as client,
    ):
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with pytest.raises(openai.APIError, match="boom"):
            list(stream)


def test_stream_cut_surfaces_as_transport_error() -> None:
    with FakeServer(faults=[Fault.stream_cut(after_events=2)]) as server, make_client(server) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
            list(stream)


async def test_async_client_json_and_stream() -> None:
    with FakeServer() as server:
        async with openai.AsyncOpenAI(base_url=server.url, api_key=server.api_key, max_retries=0) as client:
            completion = await client.chat.completions.create(model="m", messages=MESSAGES)
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert completion.choices[0].message.content == text == "hello from openai"

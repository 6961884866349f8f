"""The hook mechanism: the events of a call, a stream, a batch and a fallback, in order, with their facts;
inheritance by with_options, the batch and fallbacks; a raising hook; bad arguments."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from holysheep import (
    APIConnectionError,
    AsyncClient,
    Client,
    Fallback,
    Hooks,
    InvalidRequestError,
    RateLimitError,
    StreamMetrics,
)
from holysheep.testing import FakeServer, Fault

from .conftest import MESSAGES, MODEL, Recorder


def _client(server: FakeServer, hooks: list[Any], **kw: Any) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, hooks=hooks, initial_retry_delay=0, **kw)


def test_create_reports_each_attempt_and_the_outcome(server: FakeServer, recorder: Recorder) -> None:
    server.set_faults([Fault.status(500), None])
    with _client(server, [recorder]) as client:
        resp = client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=5)
    assert recorder.names() == ["on_request", "on_response", "on_request", "on_response"]
    first, retry, second, done = (e for _, e in recorder.events)
    assert (first.attempt, first.retries_taken, first.served_by) == (1, 0, "primary")
    assert (first.host, first.port) == ("127.0.0.1", server.port)
    assert first.url == f"{server.url}/chat/completions"
    assert (retry.outcome, retry.status_code, retry.attempt, type(retry.error).__name__) == (
        "retry", 500, 1, "InternalServerError")
    assert retry.delay_s == 0.0
    assert (second.attempt, second.retries_taken) == (2, 1)
    assert (done.outcome, done.status_code, done.retries_taken, done.error) == ("success", 200, 1, None)
    assert done.response is resp and done.request_id == resp.request_id is not None
    assert done.elapsed_s >= retry.elapsed_s >= 0
    ctx = first.ctx
    assert all(e.ctx is ctx for _, e in recorder.events)  # one context for the whole logical call
    assert (ctx.operation, ctx.model, ctx.stream, ctx.attempts, ctx.body["max_tokens"]) == ("chat", MODEL, False,
                                                                                          2, 5)


def test_a_final_error_is_reported_before_it_is_raised(server: FakeServer, recorder: Recorder) -> None:
    server.set_faults([Fault.status(429), Fault.status(429)])
    with _client(server, [recorder], max_retries=1) as client, pytest.raises(RateLimitError):
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    outcomes = [(e.outcome, e.status_code) for e in recorder.of("on_response")]
    assert outcomes == [("retry", 429), ("error", 429)]
    assert isinstance(recorder.of("on_response")[-1].error, RateLimitError)


def test_a_transport_error_has_no_status(recorder: Recorder) -> None:
    with Client(api_key="hs_" + "k" * 24, base_url="http://127.0.0.1:9/v1", max_retries=0, hooks=[recorder]) as c, \
            pytest.raises(APIConnectionError):
        c.chat.completions.create(model=MODEL, messages=MESSAGES)
    (event,) = recorder.of("on_response")
    assert (event.outcome, event.status_code, event.request_id) == ("error", None, None)
    assert type(event.error).__name__ == "APIConnectionError"


def test_stream_reports_first_chunk_and_end_with_metrics(server: FakeServer, recorder: Recorder) -> None:
    with _client(server, [recorder]) as client, client.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True}) as stream:
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert recorder.names() == ["on_request", "on_response", "on_stream_first_chunk", "on_stream_end"]
    response, first, end = recorder.events[1][1], recorder.events[2][1], recorder.events[3][1]
    assert response.outcome == "success" and response.response is stream
    assert first.chunk.model == MODEL and first.elapsed_s >= 0
    assert end.error is None and end.closed is False and end.text == text
    assert isinstance(end.metrics, StreamMetrics) and end.metrics.chunks == end.chunks == stream.metrics.chunks
    assert end.finish_reasons == ["stop"] and end.usage.completion_tokens > 0
    assert end.response_model == MODEL and end.response_id
    assert end.elapsed_s >= first.elapsed_s


def test_a_stream_closed_early_ends_once_with_closed(server: FakeServer, recorder: Recorder) -> None:
    with _client(server, [recorder]) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a b c d e"}],
                                                stream=True)
        next(iter(stream))
        stream.close()
        stream.close()
    (end,) = recorder.of("on_stream_end")
    assert end.closed is True and end.error is None


def test_a_stream_cut_mid_way_ends_with_its_typed_error(server: FakeServer, recorder: Recorder) -> None:
    server.set_faults([Fault.stream_cut(after_events=2)])
    with _client(server, [recorder]) as client:
        stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
        with pytest.raises(Exception) as info, stream:
            list(stream)
    (end,) = recorder.of("on_stream_end")
    assert end.error is info.value and type(end.error).__name__ == "StreamInterruptedError"
    assert recorder.names()[-1] == "on_stream_end"


def test_async_client_reports_the_same_events(server: FakeServer, recorder: Recorder) -> None:
    async def main() -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, hooks=[recorder]) as client:
            await client.chat.completions.create(model=MODEL, messages=MESSAGES)
            stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
            async with stream:
                async for _ in stream:
                    pass

    asyncio.run(main())
    assert recorder.names() == ["on_request", "on_response", "on_request", "on_response", "on_stream_first_chunk",
                                "on_stream_end"]


def test_with_options_keeps_the_hooks_and_may_replace_them(server: FakeServer, recorder: Recorder) -> None:
    other = Recorder()
    with _client(server, [recorder]) as client:
        client.with_options(max_retries=0).chat.completions.create(model=MODEL, messages=MESSAGES)
        client.with_options(hooks=[other]).chat.completions.create(model=MODEL, messages=MESSAGES)
    assert recorder.names() == ["on_request", "on_response"]
    assert other.names() == ["on_request", "on_response"]


def test_fallback_reports_the_move_and_who_served(recorder: Recorder) -> None:
    with FakeServer(faults=[Fault.status(503)] * 2) as primary, FakeServer() as backup:
        fb = Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")
        with Client(api_key=primary.api_key, base_url=primary.url, max_retries=1, initial_retry_delay=0,
                    fallbacks=[fb], hooks=[recorder]) as client:
            resp = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert resp.served_by == "backup"
    requests = recorder.of("on_request")
    assert [(e.attempt, e.served_by, e.port) for e in requests] == [
        (1, "primary", primary.port), (2, "primary", primary.port), (3, "backup", backup.port)]
    assert [(e.outcome, e.served_by) for e in recorder.of("on_response")] == [
        ("retry", "primary"), ("fallback", "primary"), ("success", "backup")]


def test_batch_reports_start_items_and_end_with_the_client_hooks(server: FakeServer, recorder: Recorder) -> None:
    with _client(server, [recorder]) as client:
        results = client.chat.completions.batch(["a", "b", "c"], model=MODEL, concurrency=2, check_quota=False)
    assert len(results.responses) == 3
    names = recorder.names()
    assert names[0] == "on_batch_start" and names[-1] == "on_batch_end"
    assert names.count("on_request") == 3 and names.count("on_batch_item") == 3
    batch = recorder.of("on_batch_start")[0].batch
    assert all(e.ctx.batch is batch for e in recorder.of("on_request"))
    assert sorted(e.result.index for e in recorder.of("on_batch_item")) == [0, 1, 2]
    assert recorder.of("on_batch_end")[0].batch.stats.succeeded == 3
    assert batch.total == 3 and batch.model == MODEL


def test_a_raising_hook_never_breaks_a_call_and_is_logged_once(server: FakeServer, recorder: Recorder,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Hooks):
        def on_request(self, event: Any) -> None:
            raise RuntimeError("boom")

        def on_response(self, event: Any) -> None:
            raise ValueError("bang")

    with caplog.at_level(logging.WARNING, logger="holysheep"), _client(server, [Broken(), recorder]) as client:
        for _ in range(3):
            assert client.chat.completions.create(model=MODEL, messages=MESSAGES).choices
    warnings = [r for r in caplog.records if "hook" in r.getMessage()]
    assert len(warnings) == 1 and "Broken.on_request raised RuntimeError: boom" in warnings[0].getMessage()
    assert recorder.names() == ["on_request", "on_response"] * 3  # the next hook still runs


def test_duck_typed_hooks_need_only_the_methods_they_use(server: FakeServer) -> None:
    seen: list[int] = []

    class OnlyRequests:
        def on_request(self, event: Any) -> None:
            seen.append(event.attempt)

    with _client(server, [OnlyRequests()]) as client:
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert seen == [1]


@pytest.mark.parametrize(("hooks", "match"), [
    (Recorder, r"hooks\[0\] is the class Recorder"),
    ([object()], r"hooks\[0\] is object, which has none of the hook methods"),
    ("on_request", "hooks must be a list of hook objects"),
])
def test_bad_hooks_are_refused_before_any_request(hooks: Any, match: str) -> None:
    value = [hooks] if isinstance(hooks, type) else hooks
    with pytest.raises(InvalidRequestError, match=match):
        Client(api_key="hs_" + "k" * 24, hooks=value)


def test_without_hooks_a_call_carries_no_context(server: FakeServer) -> None:
    from holysheep._clients.resources.chat import parse_chat_completion
    from holysheep._core.request import build_chat_spec

    with Client(api_key=server.api_key, base_url=server.url) as client:
        spec = build_chat_spec(model=MODEL, messages=MESSAGES, stream=False, params={}, parse=parse_chat_completion)
        assert client.plan(spec).ctx is None
        assert client.config.hooks is None


def test_a_stream_retried_before_its_first_event_reports_only_the_one_that_was_handed_out(
        server: FakeServer, recorder: Recorder) -> None:
    server.set_faults([Fault.stream_cut(after_events=0), None])
    with _client(server, [recorder]) as client, client.chat.completions.create(
            model=MODEL, messages=MESSAGES, stream=True) as stream:
        list(stream)
    assert recorder.names() == ["on_request", "on_response", "on_request", "on_response", "on_stream_first_chunk",
                                "on_stream_end"]
    retry = recorder.of("on_response")[0]
    assert (retry.outcome, type(retry.error).__name__) == ("retry", "APIConnectionError")
    (end,) = recorder.of("on_stream_end")
    assert end.error is None and end.chunks > 0


def test_a_batch_on_a_client_with_fallbacks_reports_through_its_thread_sender(recorder: Recorder) -> None:
    with FakeServer() as primary, FakeServer() as backup:
        fb = Fallback(base_url=backup.url, api_key=backup.api_key, name="backup")
        with Client(api_key=primary.api_key, base_url=primary.url, fallbacks=[fb], hooks=[recorder]) as client:
            results = client.chat.completions.batch(["a", "b"], model=MODEL, check_quota=False)
    assert len(results.responses) == 2
    batch = recorder.of("on_batch_start")[0].batch
    assert [e.ctx.batch is batch for e in recorder.of("on_request")] == [True, True]
    assert len(recorder.of("on_batch_item")) == 2 and len(recorder.of("on_batch_end")) == 1

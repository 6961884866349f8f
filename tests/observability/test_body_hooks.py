"""``on_body_end``: what a body handed over unread (``with_streaming_response`` without ``stream=True``) tells the
call's hooks, once, after ``on_response``: read in full (with the parsed reply, the caller's own object), part
way, unread, or failed with its typed error. The core's ``BodyWatch`` decides it (unit tests at the end); with no
hook that listens there is no watch at all."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from holysheep import APIConnectionError, AsyncClient, Client, Hooks
from holysheep._core import body_report
from holysheep._core.body_report import BodyWatch
from holysheep._core.hook_events import CallContext
from holysheep.testing import FakeServer

from ..core.conftest import COMPLETION
from ..streaming.conftest import ClockedParts, FakeClock
from .conftest import MODEL, Recorder

WORDS = [{"role": "user", "content": "one two three four"}]


def _lazy(client: Any) -> Any:
    return client.chat.completions.with_streaming_response.create(model=MODEL, messages=WORDS)


def _client(server: FakeServer, hooks: list[Any], **kw: Any) -> Client:
    return Client(api_key=server.api_key, base_url=server.url, hooks=hooks, initial_retry_delay=0, **kw)


def test_a_read_body_ends_once_after_on_response_with_the_callers_parsed_reply(server: FakeServer,
                                                                                recorder: Recorder) -> None:
    with _client(server, [recorder]) as client:
        with _lazy(client) as response:
            assert recorder.names() == ["on_request", "on_response"]
            assert recorder.of("on_response")[0].outcome == "success"
            parsed = response.parse()
            content = response.read()
        response.close()
    assert recorder.names() == ["on_request", "on_response", "on_body_end"]
    (end,) = recorder.of("on_body_end")
    assert (end.read, end.error, end.unparsed, end.status_code) == ("full", None, None, 200)
    assert end.bytes_read == len(content) and end.request_id == response.request_id is not None
    assert end.response is parsed  # parsed once, for the hook and the caller alike
    assert (parsed.usage.prompt_tokens, parsed.usage.completion_tokens) == (5, 4)
    assert end.ctx is recorder.of("on_request")[0].ctx and end.ctx.lazy_body and not end.ctx.stream
    assert end.served_by == "primary" and end.elapsed_s >= recorder.of("on_response")[0].elapsed_s


def test_an_iterated_body_is_parsed_from_what_was_read(server: FakeServer, recorder: Recorder) -> None:
    with _client(server, [recorder]) as client, _lazy(client) as response:
        lines = list(response.iter_lines())
    (end,) = recorder.of("on_body_end")
    assert end.read == "full" and end.bytes_read == len("\n".join(lines).encode())
    assert end.response.choices[0].message.content == "one two three four"


def test_partial_and_unread_bodies_end_once_without_a_reply(server: FakeServer, recorder: Recorder) -> None:
    with _client(server, [recorder]) as client:
        with _lazy(client) as response:
            assert next(response.iter_bytes(chunk_size=3)) == b'{"i'
        with _lazy(client):
            pass
    partial, unread = recorder.of("on_body_end")
    assert (partial.read, partial.error, partial.response) == ("partial", None, None)
    assert partial.bytes_read > 0  # what the transport handed over: the caller stopped before the end
    assert (unread.read, unread.bytes_read, unread.response) == ("none", 0, None)
    assert recorder.names().count("on_body_end") == 2


def test_a_failed_read_ends_with_its_typed_error(recorder: Recorder) -> None:
    class Broken(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b'{"id": "c", '
            raise httpx.ReadError("connection reset")

    with respx.mock as router, Client(api_key="hs_" + "k" * 24, base_url="https://api.test/v1", hooks=[recorder],
                                      max_retries=0) as client:
        router.post("https://api.test/v1/chat/completions").mock(return_value=httpx.Response(
            200, headers={"content-type": "application/json"}, stream=Broken()))
        with _lazy(client) as response, pytest.raises(APIConnectionError) as raised:
            response.read()
    (end,) = recorder.of("on_body_end")
    assert (end.read, end.bytes_read, end.response) == ("partial", 12, None)
    assert end.error is raised.value


def test_a_raising_on_body_end_never_breaks_the_read(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    class Bad(Hooks):
        def on_body_end(self, event: Any) -> None:
            raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="holysheep"), _client(server, [Bad()]) as client:
        for _ in range(2):
            with _lazy(client) as response:
                assert response.parse().usage.completion_tokens == 4
    assert [r.getMessage() for r in caplog.records if "on_body_end" in r.getMessage()] == [
        "holysheep hook Bad.on_body_end raised RuntimeError: boom (ignored; logged once per hook)"]


def test_async_clients_report_the_same(server: FakeServer, recorder: Recorder) -> None:
    async def main(backend: str) -> None:
        async with AsyncClient(api_key=server.api_key, base_url=server.url, hooks=[recorder],
                               http_backend=backend) as client:
            async with _lazy(client) as r:
                assert (await r.parse()).usage.completion_tokens == 4
            async with _lazy(client) as r:
                await r.iter_bytes(chunk_size=2).__anext__()

    asyncio.run(main("aiohttp"))
    asyncio.run(main("httpx"))
    assert [(e.read, e.response is not None) for e in recorder.of("on_body_end")] == [
        ("full", True), ("partial", False)] * 2


def test_without_a_listening_hook_there_is_no_watch(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The no-hooks path: no context, no watch, the watch factory never called."""
    class OnlyResponses(Hooks):
        def on_response(self, event: Any) -> None:
            pass

    with _client(server, []) as plain, _client(server, [OnlyResponses()]) as deaf:
        for client in (plain, deaf):
            with _lazy(client) as response:
                assert response._watch is None
                assert response.parse().usage.completion_tokens == 4
    monkeypatch.setattr("holysheep._clients.streamed_response.watch_body",
                        lambda *a, **k: pytest.fail("watch_body called without hooks"))
    with _client(server, []) as plain, plain.chat.completions.with_streaming_response.create(
            model=MODEL, messages=WORDS) as response:
        assert b"".join(response.iter_bytes())


def test_the_body_ends_on_the_clients_clock(kind: str, respx_mock: respx.MockRouter, recorder: Recorder) -> None:
    """Headers after 0.25 s, the body in two pieces 0.125 s apart: ``on_response`` at 0.25, ``on_body_end`` at
    0.5, and the span's duration exactly 0.5."""
    pytest.importorskip("opentelemetry.sdk")
    from .otel_util import instrumented

    clock = FakeClock()
    body = json.dumps({**COMPLETION, "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})

    def reply(request: httpx.Request) -> httpx.Response:
        clock.advance(0.25)
        half = len(body) // 2
        return httpx.Response(200, headers={"content-type": "application/json"},
                              stream=ClockedParts(clock, 0.125, body[:half].encode(), 0.125, body[half:].encode()))

    respx_mock.post("https://api.test/v1/chat/completions").mock(side_effect=reply)
    kw: dict[str, Any] = {"api_key": "hs_" + "k" * 24, "base_url": "https://api.test/v1", "hooks": [recorder]}
    with instrumented() as t:
        if kind == "sync":
            with Client(**kw) as client:
                client._use_clock(clock)
                with _lazy(client) as response:
                    assert response.parse().usage.prompt_tokens == 7
        else:
            async def main() -> None:
                async with AsyncClient(**kw) as client:
                    client._use_clock(clock)
                    async with _lazy(client) as r:
                        assert [piece async for piece in r.iter_bytes()]

            asyncio.run(main())
    ((_, success), (_, end)) = [(n, e) for n, e in recorder.events if n in ("on_response", "on_body_end")]
    assert (success.outcome, success.elapsed_s, end.read, end.elapsed_s) == ("success", 0.25, "full", 0.5)
    (duration,) = t.points("gen_ai.client.operation.duration")
    assert (duration.count, duration.sum) == (1, 0.5)
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in t.points("gen_ai.client.token.usage")}
    assert tokens == {"input": 7, "output": 3}


def test_a_body_that_is_not_the_expected_json_ends_without_usage(respx_mock: respx.MockRouter) -> None:
    """Read in full, but not a completion: the span says so (``unparsed="invalid"``), the caller's ``parse()``
    still raises its typed error, and nothing is guessed."""
    pytest.importorskip("opentelemetry.sdk")
    from holysheep import APIResponseValidationError

    from .otel_util import instrumented

    respx_mock.post("https://api.test/v1/chat/completions").mock(return_value=httpx.Response(
        200, headers={"content-type": "application/json"}, content=b'{"usage": "none of it"}'))
    with (instrumented() as t, Client(api_key="hs_" + "k" * 24, base_url="https://api.test/v1") as client,
          _lazy(client) as response):
        assert response.json() == {"usage": "none of it"}
        with pytest.raises(APIResponseValidationError):
            response.parse()
    (span,) = t.spans()
    a = dict(span.attributes or {})
    assert (a["holysheep.response.read"], a["holysheep.response.unparsed"]) == ("full", "invalid")
    assert not {k for k in a if k.startswith(("gen_ai.usage.", "gen_ai.response."))}
    assert t.points("gen_ai.client.token.usage") == []


# --------------------------------------------------------------------------------------- BodyWatch (pure)
class _Emitter:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def wants(self, method: str) -> bool:
        return method == "on_body_end"

    def emit(self, method: str, event: Any) -> None:
        self.events.append(event)


def _watch(limit: int = 10) -> tuple[BodyWatch, _Emitter]:
    hooks = _Emitter()
    ctx = CallContext(hooks, "POST", "/chat/completions", {"model": "m"}, False)
    watch = body_report.watch_body(ctx, 200, {"x-request-id": "req_1"}, None, "primary", lambda b: b.decode(), limit)
    assert watch is not None
    return watch, hooks


def test_watch_copies_up_to_the_limit_only() -> None:
    watch, hooks = _watch(limit=10)
    for piece in (b"01234", b"56789"):
        watch.piece(piece)
    watch.ended()
    (event,) = hooks.events
    assert (event.read, event.bytes_read, event.response, event.request_id) == ("full", 10, "0123456789", "req_1")

    watch, hooks = _watch(limit=10)
    for piece in (b"01234", b"56789", b"a"):
        watch.piece(piece)
    watch.ended()
    (event,) = hooks.events
    assert (event.read, event.bytes_read, event.response, event.unparsed) == ("full", 11, None, "over_copy_limit")


def test_watch_kept_body_is_not_copied_and_invalid_json_is_named() -> None:
    watch, hooks = _watch()
    watch.parse = lambda b: (_ for _ in ()).throw(ValueError("not JSON"))
    watch.keep()
    watch.piece(b"x" * 50)
    watch.ended(b"x" * 50)  # the caller's own copy, past the limit: no copy was needed
    (event,) = hooks.events
    assert (event.response, event.unparsed) == (None, "invalid")


def test_watch_reports_exactly_once() -> None:
    watch, hooks = _watch()
    watch.ended()
    watch.closed()
    watch.failed(RuntimeError())
    assert [e.read for e in hooks.events] == ["full"]
    watch, hooks = _watch()
    watch.piece(b"ab")
    error = RuntimeError("cut")
    watch.failed(error)
    watch.closed()
    watch.ended()
    assert [(e.read, e.error, e.bytes_read) for e in hooks.events] == [("partial", error, 2)]
    watch, hooks = _watch()
    watch.closed()
    watch.closed()
    assert [e.read for e in hooks.events] == ["none"]


def test_watch_body_is_none_without_a_listener() -> None:
    ctx = CallContext(_Emitter(), "POST", "/chat/completions", None, False)
    assert body_report.watch_body(None, 200, {}, None, "primary", bytes, 10) is None
    ctx.hooks = type("Deaf", (), {"wants": lambda self, m: False, "emit": lambda self, m, e: None})()
    assert body_report.watch_body(ctx, 200, {}, None, "primary", bytes, 10) is None

"""A wire format defined only here (an Anthropic-Messages-shaped one, #44) gets the client's retries, rate-limit
pauses, hooks, response cache, cost cap and batch engine with no change under ``src/``: the seam is
``holysheep._core.wire.WireFormat`` and ``client.wire(fmt)``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from holysheep import Client
from holysheep._core.request import RequestSpec, request_options
from holysheep._core.wire import TokenUsage, WireFormat, register
from holysheep.hooks import Hooks, RequestEvent, ResponseEvent


class TextBlock(BaseModel):
    type: str = "text"
    text: str = ""


class MessagesUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class Message(BaseModel):
    id: str = ""
    type: str = "message"
    model: str = ""
    content: list[TextBlock] = []
    stop_reason: str | None = None
    usage: MessagesUsage | None = None


class MessagesWire(WireFormat):
    """``POST /messages``: ``messages`` and a required ``max_tokens`` in; ``content`` blocks out."""

    name: ClassVar[str] = "messages"
    path: ClassVar[str] = "messages"
    urls: ClassVar[frozenset[str]] = frozenset({"/v1/messages"})
    response_type: ClassVar[type[BaseModel]] = Message
    output_limit_fields: ClassVar[tuple[str, ...]] = ("max_tokens",)
    param_names: ClassVar[frozenset[str] | None] = frozenset({"messages", "max_tokens", "system", "temperature"})

    def spec(self, params: Mapping[str, object]) -> RequestSpec:
        body = {k: v for k, v in params.items() if k not in ("max_retries", "timeout", "extra_headers")}
        return RequestSpec("POST", self.path, body, self.parse, options=request_options(params), wire=self)

    def usage_block(self, usage: object) -> TokenUsage | None:
        if not isinstance(usage, MessagesUsage):
            return None
        return TokenUsage(usage.input_tokens, usage.output_tokens, 0, usage.input_tokens + usage.output_tokens)

    def output_texts(self, response: object) -> list[str | None]:
        assert isinstance(response, Message)
        return ["".join(b.text for b in response.content)]

    def finish_reasons(self, response: object) -> list[str | None]:
        assert isinstance(response, Message)
        return [response.stop_reason]

    def answered(self, response: object) -> bool:
        return any(self.output_texts(response))

    def error_fields(self, payload: object) -> Mapping[str, object] | None:
        """This API's errors are ``{"type": "error", "problem": {"kind", "text"}}``."""
        problem = payload.get("problem") if isinstance(payload, dict) else None
        if not isinstance(problem, dict):
            return None
        return {"type": problem.get("kind"), "message": problem.get("text"), "code": problem.get("code")}


MESSAGES = register(MessagesWire())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    refuse_first = 0  # how many of the first requests get a 429
    invalid = False  # answer 400 in this API's own error shape
    paths: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        server = self.server
        server.paths.append(self.path)
        if server.invalid:
            payload = b'{"type": "error", "problem": {"kind": "invalid_request", "text": "max_tokens too big", ' \
                      b'"code": "too_big"}}'
            self.send_response(400)
        elif len(server.paths) <= server.refuse_first:
            payload = b'{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}'
            self.send_response(429)
            self.send_header("retry-after", "0")
        else:
            text = body["messages"][-1]["content"].upper()
            payload = json.dumps({"id": f"msg_{len(server.paths)}", "type": "message", "model": body["model"],
                                  "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()
            self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.paths = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


class Recorder(Hooks):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_request(self, event: RequestEvent) -> None:
        self.events.append(f"request {event.ctx.path}")

    def on_response(self, event: ResponseEvent) -> None:
        self.events.append(f"response {event.outcome}")


def _client(server: _Server, **kwargs: object) -> Client:
    host, port = server.server_address[:2]
    return Client(base_url=f"http://{host!s}:{port}/v1", api_key="sk-test-seam", initial_retry_delay=0.001,
                  max_retry_delay=0.002, **kwargs)  # type: ignore[arg-type]


def test_a_call_is_retried_hooked_and_cached(server: _Server, tmp_path: Path) -> None:
    server.refuse_first = 1
    hooks = Recorder()
    with _client(server, hooks=[hooks], cache=tmp_path / "cache.db") as client:
        reply = client.wire(MESSAGES).create(model="claude-test", max_tokens=50,
                                             messages=[{"role": "user", "content": "hi"}])
        assert isinstance(reply, Message)
        assert reply.content[0].text == "HI" and reply.usage == MessagesUsage(input_tokens=10, output_tokens=5)
        assert server.paths == ["/v1/messages", "/v1/messages"]  # the 429, then the answer
        assert hooks.events == ["request messages", "response retry", "request messages", "response success"]
        again = client.wire(MESSAGES).create(model="claude-test", max_tokens=50,
                                             messages=[{"role": "user", "content": "hi"}])
        assert isinstance(again, Message) and again.content[0].text == "HI"
        assert len(server.paths) == 2  # the cache answered: no request
        assert client.cache is not None and client.cache.hits == 1


def test_a_batch_pauses_on_429_caps_spend_and_counts_usage(server: _Server) -> None:
    server.refuse_first = 1
    with _client(server) as client:
        results = client.wire(MESSAGES).batch(["a", "b", "c"], model="claude-test", max_tokens=20, concurrency=1,
                                              max_cost_usd=1.0, prices={"claude-test": (1.0, 2.0)})
    assert [r.ok for r in results] == [True, True, True]
    texts = [r.response.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts == ["A", "B", "C"]
    summary = results.summary()
    assert (summary.requests, summary.rate_limited, summary.retries) == (4, 1, 1)
    assert (summary.prompt_tokens, summary.completion_tokens) == (30, 15)
    assert summary.spent_usd == pytest.approx(3 * (10 * 1.0 + 5 * 2.0) / 1e6)
    assert len(server.paths) == 4


def test_its_error_body_is_read_by_the_format(server: _Server) -> None:
    from holysheep import BadRequestError

    server.invalid = True
    with _client(server) as client, pytest.raises(BadRequestError) as info:
        client.wire(MESSAGES).create(model="claude-test", max_tokens=10**9, messages=[{"role": "user", "content": "x"}])
    error = info.value
    assert (error.type, error.code, error.status_code) == ("invalid_request", "too_big", 400)
    assert "max_tokens too big" in str(error) and len(server.paths) == 1  # a 400 is not retried


def test_a_batch_refuses_an_argument_the_format_does_not_take(server: _Server) -> None:
    from holysheep import InvalidRequestError

    with _client(server) as client, pytest.raises(InvalidRequestError, match="top_k"):
        client.wire(MESSAGES).batch(["a"], model="claude-test", max_tokens=20, top_k=3)
    assert server.paths == []

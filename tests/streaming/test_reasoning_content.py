"""``reasoning_content`` (DeepSeek-style servers): typed on the message and the delta, kept when a stream is
folded, told apart in ``StreamMetrics``, and sent back when the message is."""

from __future__ import annotations

import json
from typing import Any

import httpx

from holysheep import Client
from holysheep._core.stream_state import StreamState

from .conftest import FakeClock

KEY = "hs_TestKey0123456789abcdefWXYZ"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v3.2",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


STREAM = (_chunk({"role": "assistant", "content": None, "reasoning_content": "Let me "}) +
          _chunk({"reasoning_content": "think."}) + _chunk({"content": "Four."}) + _chunk({}, "stop") +
          "data: [DONE]\n\n").encode()
COMPLETION = {"id": "x", "object": "chat.completion", "created": 1, "model": "deepseek-v3.2",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {
                  "role": "assistant", "content": "Four.", "reasoning_content": "2+2 is 4."}}]}


def _client(sent: list[dict[str, Any]]) -> Client:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        if body.get("stream"):
            return httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=COMPLETION)

    return Client(api_key=KEY, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_typed_on_message_and_delta_and_kept_when_folded() -> None:
    sent: list[dict[str, Any]] = []
    with _client(sent) as client:
        reply = client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "2+2"}])
        assert reply.choices[0].message.reasoning_content == "2+2 is 4."
        assert "reasoning_content" not in (reply.choices[0].message.model_extra or {})
        with client.chat.completions.create(model="deepseek-v3.2", messages=[{"role": "user", "content": "2+2"}],
                                            stream=True) as stream:
            pieces = [c.choices[0].delta.reasoning_content for c in stream]
            final = stream.get_final_completion()
    assert pieces == ["Let me ", "think.", None, None]
    assert final.choices[0].message.reasoning_content == "Let me think."
    assert final.choices[0].message.content == "Four."


def test_round_trips_when_the_message_is_sent_back() -> None:
    sent: list[dict[str, Any]] = []
    with _client(sent) as client:
        with client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+2"}],
                                            stream=True) as stream:
            message = stream.get_final_completion().choices[0].message
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2+2"}, message,
                                                            {"role": "user", "content": "and 3+3?"}])
    assert sent[1]["messages"][1] == {"role": "assistant", "content": "Four.", "reasoning_content": "Let me think."}


def test_metrics_tell_first_reasoning_from_first_content() -> None:
    clock = FakeClock()
    state = StreamState(0.0, clock=clock)
    for event in STREAM.split(b"\n\n")[:-1]:  # one event a second: at t=1, 2, 3, 4 and [DONE] at 5
        clock.advance(1.0)
        state.feed(event + b"\n\n")
    metrics = state.metrics()
    assert metrics.total_s == 5.0 and metrics.itl_mean_s == 1.0
    assert metrics.time_to_first_reasoning_s == 1.0  # first chunk: reasoning
    assert metrics.time_to_first_content_s == 3.0  # third chunk: the answer
    assert metrics.ttft_s == 1.0  # first output of any kind
    assert metrics.completion_tokens == 3

"""``client.responses`` (#44): openai-python's Responses API on both clients, through the same retries, cache,
hooks, spans, cost cap and batch engine as chat completions, against FakeServer's ``/v1/responses``."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from holysheep import AsyncClient, Client, InvalidRequestError
from holysheep._core.wire import responses_wire
from holysheep._engine.spend import Price, input_token_bound, output_token_bound
from holysheep.hooks import Hooks, ResponseEvent, StreamEndEvent
from holysheep.testing import FakeServer, Fault, ScriptedReply, tool_call
from holysheep.types.responses import (
    ParsedResponse,
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseTextDeltaEvent,
)

KEY = "sk-test-responses-0123456789"


def _client(server: FakeServer, **kwargs: object) -> Client:
    return Client(base_url=server.url, api_key=KEY, initial_retry_delay=0.001, max_retry_delay=0.002,
                  **kwargs)  # type: ignore[arg-type]


def _bodies(server: FakeServer) -> list[dict[str, object]]:
    return [r.body for r in server.requests if r.path.endswith("/responses")]  # type: ignore[misc]


def test_create_sends_openai_s_body_and_types_the_reply() -> None:
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        reply = client.responses.create(model="gpt-test", input="hello there", instructions="Be brief.",
                                        max_output_tokens=50, temperature=0.5)
        assert isinstance(reply, Response)
        assert reply.output_text == "hello there" and reply.object == "response" and reply.status == "completed"
        assert reply.usage is not None and (reply.usage.input_tokens, reply.usage.output_tokens) == (5, 2)
        assert [r.path for r in server.requests] == ["/v1/responses"]
        assert _bodies(server) == [{"model": "gpt-test", "input": "hello there", "instructions": "Be brief.",
                                    "max_output_tokens": 50, "temperature": 0.5}]


def test_function_tools_and_their_outputs_go_both_ways() -> None:
    call = tool_call("get_weather", {"city": "Paris"}, id="call_1")
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}]
    with FakeServer(api_key=KEY, reply=ScriptedReply("", tool_calls=[call])) as server, _client(server) as client:
        first = client.responses.create(model="m", input="weather in Paris?", tools=tools)
        calls = [i for i in first.output if isinstance(i, ResponseFunctionToolCall)]
        assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
            ("call_1", "get_weather", {"city": "Paris"})]
        server.reply = "sunny"  # type: ignore[assignment]
        items = [{"role": "user", "content": "weather in Paris?"}, calls[0].model_dump(),
                 {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]
        second = client.responses.create(model="m", input=items, tools=tools)
        assert second.output_text == "sunny"
        assert _bodies(server)[1]["input"][2] == {"type": "function_call_output", "call_id": "call_1",
                                                  "output": "sunny"}


class City(BaseModel):
    name: str
    population: int


def test_parse_sends_the_json_schema_and_validates_output_parsed() -> None:
    reply = ScriptedReply(json.dumps({"name": "Paris", "population": 2100000}))
    with FakeServer(api_key=KEY, reply=reply) as server, _client(server) as client:
        parsed = client.responses.parse(model="m", input="a city", text_format=City)
        assert isinstance(parsed, ParsedResponse)
        assert parsed.output_parsed == City(name="Paris", population=2100000)
        fmt = _bodies(server)[0]["text"]["format"]  # type: ignore[index]
        assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "City", True)
        assert fmt["schema"]["required"] == ["name", "population"]


def test_stream_events_and_get_final_response() -> None:
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        with client.responses.stream(model="m", input="one two three") as stream:
            events = list(stream)
            final = stream.get_final_response()
        deltas = [e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)]
        assert "".join(deltas) == "one two three" and len(deltas) == 3
        assert events[0].type == "response.created" and isinstance(events[-1], ResponseCompletedEvent)
        assert final.output_text == "one two three" and final.usage is not None and final.usage.output_tokens == 3
        raw = client.responses.create(model="m", input="a b", stream=True)
        with raw:
            assert [e.type for e in raw if e.type.endswith(".delta")] == ["response.output_text.delta"] * 2
        assert _bodies(server)[0]["stream"] is True


def test_with_raw_response_gives_status_headers_and_the_parsed_response() -> None:
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        raw = client.responses.with_raw_response.create(model="m", input="x")
        assert raw.status_code == 200 and raw.headers["content-type"].startswith("application/json")
        assert raw.parse().output_text == "x"


def test_retries_cache_and_hooks_are_chat_s(tmp_path: Path) -> None:
    class Recorder(Hooks):
        def __init__(self) -> None:
            self.outcomes: list[str] = []
            self.ends: list[tuple[object, str]] = []

        def on_response(self, event: ResponseEvent) -> None:
            self.outcomes.append(event.outcome)

        def on_stream_end(self, event: StreamEndEvent) -> None:
            self.ends.append((event.usage is not None, event.text))

    hooks = Recorder()
    faults = [Fault.status(500), None]
    with FakeServer(api_key=KEY, faults=faults, fault_paths=("/responses",)) as server, \
            _client(server, hooks=[hooks], cache=tmp_path / "cache.db") as client:
        first = client.responses.create(model="m", input="cache me")
        assert first.retries_taken == 1 and hooks.outcomes == ["retry", "success"]
        again = client.responses.create(model="m", input="cache me")
        assert again.cached and again.output_text == "cache me"
        assert len(server.requests) == 2  # the 500, the answer; the second call came from the cache
        with client.responses.stream(model="m", input="s t") as stream:
            stream.until_done()
        assert hooks.ends == [(True, "s t")]


def test_spans_carry_the_responses_usage() -> None:
    otel = pytest.importorskip("tests.observability.otel_util")
    with otel.instrumented() as t, FakeServer(api_key=KEY) as server, _client(server) as client:
        client.responses.create(model="m", input="span me", max_output_tokens=20)
        with client.responses.stream(model="m", input="a b c") as stream:
            stream.until_done()
    spans = t.spans()
    assert len(spans) == 2
    for span, out in zip(spans, (2, 3), strict=True):
        attrs = span.attributes
        assert attrs["gen_ai.usage.output_tokens"] == out and attrs["gen_ai.usage.input_tokens"] > 0
        assert attrs["gen_ai.response.finish_reasons"] == ("completed",)
    assert spans[0].attributes["gen_ai.request.max_tokens"] == 20


def test_the_cost_cap_reserves_from_max_output_tokens() -> None:
    body = {"model": "m", "input": "hello", "max_output_tokens": 300, "temperature": 0}
    wire = responses_wire()
    assert output_token_bound(body, wire) == (300, True)
    assert input_token_bound(body, wire) == len(b'{"input":"hello"}')
    price = Price("m", 1.0, 2.0)
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        cap = price.cost(input_token_bound(body, wire), 300) * 1.5  # the first item fits, the second waits
        results = client.responses.batch([{"input": "hello"}, {"input": "world"}], model="m", max_output_tokens=300,
                                         temperature=0, max_cost_usd=cap, prices={"m": (1.0, 2.0)}, concurrency=2)
        assert [r.response.output_text for r in results] == ["hello", "world"]  # type: ignore[union-attr]
        usages = [r.response.usage for r in results]  # type: ignore[union-attr]
        billed = sum(price.cost(u.input_tokens, u.output_tokens) for u in usages)  # type: ignore[union-attr]
        assert billed > 0 and results.summary().spent_usd == pytest.approx(billed)
        sent = len(_bodies(server))
        tight = price.cost(input_token_bound(body, wire), 299)  # below one item's worst case: nothing is sent
        stopped = client.responses.batch([{"input": "hello"}], model="m", max_output_tokens=300, temperature=0,
                                         max_cost_usd=tight, prices={"m": (1.0, 2.0)})
        assert not stopped[0].ok and "max_cost_usd" in str(stopped[0].error)
        assert len(_bodies(server)) == sent  # (the batch may ask /quota; no /responses request went)


def test_batch_of_prompts_counts_input_and_output_tokens() -> None:
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        results = client.responses.batch(["p one", "p two", "p three"], model="m", instructions="x")
        assert [r.response.output_text for r in results] == ["p one", "p two", "p three"]  # type: ignore[union-attr]
        summary = results.summary()
        assert (summary.succeeded, summary.completion_tokens) == (3, 2 + 2 + 2)
        assert [b["input"] for b in _bodies(server)] == ["p one", "p two", "p three"]
        assert all(b["instructions"] == "x" for b in _bodies(server))


def test_arguments_are_checked_before_any_request() -> None:
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        with pytest.raises(InvalidRequestError, match=r"max_output_token.*Did you mean .max_output_tokens."):
            client.responses.create(model="m", input="x", max_output_token=5)
        with pytest.raises(InvalidRequestError, match="input"):
            client.responses.create(model="m", input="")
        with pytest.raises(InvalidRequestError, match="max_output_tokens"):
            client.responses.create(model="m", input="x", max_output_tokens=0)
        with pytest.raises(InvalidRequestError, match="max_tokens"):
            client.responses.batch(["x"], model="m", max_tokens=5)
        assert server.requests == []


def test_the_async_client_s_methods_are_coroutine_functions(tmp_path: Path) -> None:
    async def main(server: FakeServer) -> tuple[str, str, object]:
        async with AsyncClient(base_url=server.url, api_key=KEY) as client:
            assert inspect.iscoroutinefunction(client.responses.create)
            assert inspect.iscoroutinefunction(client.responses.parse)
            assert inspect.iscoroutinefunction(client.responses.batch)
            reply = await client.responses.create(model="m", input="async hi")
            async with client.responses.stream(model="m", input="s t") as stream:
                async for _ in stream:
                    pass
                final = await stream.get_final_response()
            results = await client.responses.batch(["b"], model="m")
            return reply.output_text, final.output_text, results[0].response.output_text  # type: ignore[union-attr]

    with FakeServer(api_key=KEY) as server:
        assert asyncio.run(main(server)) == ("async hi", "s t", "b")


def test_a_2xx_body_that_is_no_response_is_retried() -> None:
    from holysheep.testing import Response as Reply

    bodies = [{}, {"error": {"message": "busy"}}, {"id": "resp_1", "object": "response", "status": "completed",
                                                    "output": [], "model": "m"}]
    with FakeServer(api_key=KEY) as server, _client(server) as client:
        server.on("POST", "/responses", lambda request: Reply(200, bodies.pop(0)))
        reply = client.responses.create(model="m", input="x")
        assert (reply.id, reply.retries_taken) == ("resp_1", 2)

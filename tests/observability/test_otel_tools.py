"""The tool runner's calls as `execute_tool {name}` spans: under the caller's span for run_tools (sync pool,
async gather), under the batch span for agent items in a batch; a raising tool is an error span."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind, StatusCode

from holysheep import AsyncClient, Client
from holysheep.testing import FakeServer, Script

from .conftest import MODEL
from .otel_util import instrumented


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    if key == "bad":
        raise KeyError(key)
    return key.upper()


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT = [{"match": "both", "replies": [{"tool_calls": [_call("lookup", key="a"), _call("lookup", key="bad")]},
                                        "{tool_results}"]}]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_run_tools_makes_execute_tool_spans_under_the_caller(kind: str) -> None:
    with FakeServer(reply=Script(SCRIPT)) as server, instrumented() as t:
        tracer = t.tracer_provider.get_tracer("app")
        with tracer.start_as_current_span("agent") as agent:
            messages = [{"role": "user", "content": "both"}]
            if kind == "sync":
                with Client(api_key=server.api_key, base_url=server.url) as client:
                    client.chat.completions.run_tools(model=MODEL, messages=messages, tools=[lookup])
            else:
                async def main() -> None:
                    async with AsyncClient(api_key=server.api_key, base_url=server.url) as client:
                        await client.chat.completions.run_tools(model=MODEL, messages=messages, tools=[lookup])
                asyncio.run(main())
    spans = t.spans()
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    assert [s.name for s in spans].count(f"chat {MODEL}") == 2 and len(tools) == 2
    ok = next(s for s in tools if s.status.status_code is StatusCode.UNSET)
    bad = next(s for s in tools if s.status.status_code is StatusCode.ERROR)
    assert ok.kind is SpanKind.INTERNAL and ok.attributes["gen_ai.operation.name"] == "execute_tool"
    assert ok.attributes["gen_ai.tool.name"] == "lookup" and ok.attributes["gen_ai.tool.call.id"]
    assert bad.attributes["error.type"] == "KeyError"
    parent = agent.get_span_context().span_id
    assert all(s.parent is not None and s.parent.span_id == parent for s in spans if s.name != "agent")


def test_agent_items_in_a_batch_put_their_tool_spans_under_the_batch() -> None:
    script = Script([{"match": "q", "replies": [{"tool_calls": [_call("lookup", key="k")]}, "answer {tool_results}"]}])
    with FakeServer(reply=script) as server, instrumented() as t, \
            Client(api_key=server.api_key, base_url=server.url) as client:
        results = client.chat.completions.batch(["q1", "q2"], model=MODEL, tools=[lookup], max_turns=3,
                                                check_quota=False)
    assert all(r.ok for r in results)
    spans = t.spans()
    (batch,) = [s for s in spans if s.name == "holysheep.batch"]
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    chats = [s for s in spans if s.name == f"chat {MODEL}"]
    assert len(tools) == 2 and len(chats) == 4
    assert all(s.parent is not None and s.parent.span_id == batch.context.span_id for s in tools + chats)

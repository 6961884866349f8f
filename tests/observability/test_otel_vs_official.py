"""Side by side with the official instrumentation: ``opentelemetry-instrumentation-openai-v2`` on openai-python
and holysheep's instrumentor on holysheep, against the same FakeServer, for a create, a stream, a tool call and a
429. Span names, kinds, statuses and every attribute they share must agree; the attributes only one side sets are
the allow-lists below, each with its reason (docs/observability.md lists them too)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
openai_v2 = pytest.importorskip("opentelemetry.instrumentation.openai_v2")

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402

import holysheep  # noqa: E402
from holysheep.testing import FakeServer, Fault, tool_call, tool_reply  # noqa: E402

from .otel_util import Telemetry, instrumented, providers  # noqa: E402

MESSAGES = [{"role": "user", "content": "hello there"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}]

# Set by holysheep only: where the call went (recommended by the convention; the official one leaves them out),
# and the server's x-request-id.
HOLYSHEEP_ONLY = {"server.address", "server.port", "holysheep.request_id"}
# Set by the official instrumentation only: openai-specific attributes (holysheep's provider is holysheep).
OFFICIAL_ONLY = {"openai.response.system_fingerprint"}
EXPECTED: dict[str, tuple[set[str], set[str]]] = {  # scenario: (holysheep only, official only)
    "create": (HOLYSHEEP_ONLY, OFFICIAL_ONLY),
    # The official stream wrapper records no finish reasons when the last chunk is the usage chunk (choices: []).
    "stream": (HOLYSHEEP_ONLY | {"gen_ai.response.finish_reasons"}, set()),
    "tool_call": (HOLYSHEEP_ONLY, OFFICIAL_ONLY),
    # An error has no response; holysheep adds the HTTP status.
    "rate_limited": (HOLYSHEEP_ONLY | {"http.response.status_code"}, set()),
}
# Shared attributes whose values differ by design.
PROVIDER = ("holysheep", "openai")  # gen_ai.provider.name: each names its own provider


def _scenarios(client: Any, server: FakeServer) -> Iterator[tuple[str, Callable[[], object]]]:
    def create() -> object:
        return client.chat.completions.create(model="gpt-4.1", messages=MESSAGES, max_tokens=20, temperature=0.5)

    def stream() -> object:
        chunks = client.chat.completions.create(model="gpt-4.1", messages=MESSAGES, stream=True,
                                                stream_options={"include_usage": True})
        return [c for c in chunks]

    def tool() -> object:
        server.reply = tool_reply(tool_call("get_weather", {}, id="call_1"))
        try:
            return client.chat.completions.create(model="gpt-4.1", messages=MESSAGES, tools=TOOLS)
        finally:
            server.reply = "echo"

    def limited() -> object:
        server.set_faults([Fault.status(429)])
        try:
            return client.chat.completions.create(model="gpt-4.1", messages=MESSAGES)
        except (openai.RateLimitError, holysheep.RateLimitError) as exc:
            return exc
        finally:
            server.set_faults(None)

    yield from (("create", create), ("stream", stream), ("tool_call", tool), ("rate_limited", limited))


def _run(client: Any, server: FakeServer, t: Telemetry) -> dict[str, ReadableSpan]:
    spans: dict[str, ReadableSpan] = {}
    for name, call in _scenarios(client, server):
        call()
        (spans[name],) = t.exporter.get_finished_spans()
        t.exporter.clear()
    return spans


@pytest.fixture
def official() -> Iterator[Telemetry]:
    t = providers()
    instrumentor = openai_v2.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)
    try:
        yield t
    finally:
        instrumentor.uninstrument()


def test_spans_match_the_official_openai_instrumentation(official: Telemetry) -> None:
    with FakeServer() as server:
        with openai.OpenAI(base_url=server.url, api_key=server.api_key, max_retries=0) as client:
            theirs = _run(client, server, official)
        with instrumented() as t, holysheep.Client(base_url=server.url, api_key=server.api_key,
                                                   max_retries=0) as client:
            ours = _run(client, server, t)
    for scenario, (ours_only, theirs_only) in EXPECTED.items():
        mine, other = ours[scenario], theirs[scenario]
        assert (mine.name, mine.kind, mine.status.status_code) == (other.name, other.kind, other.status.status_code)
        a, b = dict(mine.attributes or {}), dict(other.attributes or {})
        assert (set(a) - set(b), set(b) - set(a)) == (ours_only, theirs_only), scenario
        shared = set(a) & set(b)
        assert (a.pop("gen_ai.provider.name"), b.pop("gen_ai.provider.name")) == PROVIDER
        if scenario == "rate_limited":  # the official one writes the class's repr: "<class 'openai.RateLimitError'>"
            assert a.pop("error.type") == "RateLimitError" and "RateLimitError" in b.pop("error.type")
        else:  # both ids are the server's, one per request
            assert a.pop("gen_ai.response.id").startswith("chatcmpl-") and b.pop("gen_ai.response.id").startswith(
                "chatcmpl-")
        assert {k: a[k] for k in shared & set(a)} == {k: b[k] for k in shared & set(b)}, scenario
    assert ours["create"].attributes["gen_ai.request.max_tokens"] == 20  # shared and equal, not merely present
    assert ours["tool_call"].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)

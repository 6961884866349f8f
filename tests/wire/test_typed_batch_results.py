"""Batch results are generic in their reply type for the type checker only (``tests/compat/
test_batch_result_types_mypy.py`` checks the types): at run time every batch, whatever its format, builds plain
`BatchResult` objects in a plain `BatchResults`, and a subscripted alias (``BatchResults[Response, ...]``) works."""

from __future__ import annotations

import typing

import typing_extensions

from holysheep import Client
from holysheep._core.wire import CHAT, EMBEDDINGS, WireFormat, responses_wire
from holysheep._core.wire.responses_tools import ResponseToolRunResult
from holysheep.batch import BatchResult, BatchResults
from holysheep.testing import FakeServer
from holysheep.types.embeddings import CreateEmbeddingResponse
from holysheep.types.responses import Response

KEY = "sk-test-typed-batch-0123"


def test_responses_and_embeddings_batches_build_plain_results_holding_their_replies() -> None:
    with FakeServer(api_key=KEY) as server, Client(base_url=server.url, api_key=KEY) as client:
        responses = client.responses.batch(["hello a", "hello b"], model="m", max_output_tokens=20)
        vectors = client.wire(EMBEDDINGS).batch(["x", "y", "z"], model="m")
        one = client.wire(EMBEDDINGS).create(model="m", input="w")
    assert type(responses) is BatchResults and type(vectors) is BatchResults
    assert [type(r) for r in responses] == [BatchResult, BatchResult]
    assert [type(r.response) for r in responses] == [Response, Response]
    assert [r.response.output_text for r in responses if r.response is not None] == ["hello a", "hello b"]
    assert [type(r.response) for r in vectors] == [CreateEmbeddingResponse] * 3
    assert [r.tool_run for r in vectors] == [None, None, None] and type(one) is CreateEmbeddingResponse


def test_the_type_parameters_default_to_chat_and_subscript_at_run_time() -> None:
    alias = BatchResults[Response, ResponseToolRunResult]
    assert typing.get_origin(alias) is BatchResults and typing.get_args(alias) == (Response, ResponseToolRunResult)
    reply, run = BatchResult.__parameters__
    defaults = [getattr(p.__default__, "__forward_arg__", p.__default__) for p in (reply, run)]  # str or ForwardRef
    assert defaults == ["ChatCompletion", "ToolRunResult"]
    assert BatchResult.__slots__ == ("index", "custom_id", "response", "error", "attempts", "latency_s", "tool_run")
    formats = {wire.name: typing.get_args(type(wire).__orig_bases__[0])
               for wire in (CHAT, EMBEDDINGS, responses_wire())}
    assert formats["embeddings"] == (CreateEmbeddingResponse, typing_extensions.Never)
    assert formats["responses"][0] is Response and isinstance(responses_wire(), WireFormat)

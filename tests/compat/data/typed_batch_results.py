"""A user module typed strictly against holysheep's batch results: Responses batches give `Response` replies and
`ResponseToolRunResult` runs, chat batches `ChatCompletion` replies, embeddings batches `CreateEmbeddingResponse`
replies (sync and async). `tests/compat/test_batch_result_types_mypy.py` checks it with `mypy --strict`: 0 errors."""

from __future__ import annotations

from holysheep import AsyncClient, Client, ToolRunResult
from holysheep._core.wire import EMBEDDINGS
from holysheep._core.wire.responses_tools import ResponseToolRunResult
from holysheep.batch import BatchIterator, BatchResult, BatchResults
from holysheep.types.chat import ChatCompletion
from holysheep.types.embeddings import CreateEmbeddingResponse
from holysheep.types.responses import Response


def responses_texts(client: Client) -> list[str]:
    results = client.responses.batch(["Say hi", "Say bye"], model="gpt-4.1-mini", max_output_tokens=20)
    texts = [r.response.output_text for r in results if r.response is not None]
    first = results[0].response
    if first is not None:
        texts.append(first.output_text)
    every: list[Response] = results.responses
    some: list[Response | BaseException] = results.get_responses(allow_failures=True)
    failed: list[BatchResult[Response, ResponseToolRunResult]] = results.failed
    return texts + [r.id for r in every] + [str(len(some)), str(len(failed))]


def responses_runs(client: Client) -> list[str]:
    texts: list[str] = []
    for r in client.responses.batch(["Weather in Paris?"], model="gpt-4.1-mini", tools=[]):
        run = r.tool_run
        if run is not None:
            texts.append(run.output_text)
            final: Response = run.response
            texts.extend([final.output_text, str(run.turns), str(len(run.input))])
        texts.extend(call.name for call in r.tool_calls)
    typed: BatchResults[Response, ResponseToolRunResult] = client.responses.batch(["x"], model="m")
    return [*texts, str(len(typed))]


def chat_contents(client: Client) -> list[str | None]:
    results: BatchResults = client.chat.completions.batch(["Say hi"], model="gpt-4.1-mini")
    contents = [r.response.choices[0].message.content for r in results if r.response is not None]
    explicit: BatchResults[ChatCompletion, ToolRunResult] = results
    runs = [r.tool_run.completion.id for r in explicit if r.tool_run is not None]
    return contents + list(runs)


def embedding_sizes(client: Client) -> list[int]:
    results = client.wire(EMBEDDINGS).batch(["a", "b"], model="text-embedding-3-small")
    one: CreateEmbeddingResponse = client.wire(EMBEDDINGS).create(model="text-embedding-3-small", input="c")
    return [len(r.response.data[0].embedding) for r in results if r.response is not None] + [len(one.data)]


async def async_batches(client: AsyncClient) -> list[str | None]:
    texts: list[str | None] = []
    for r in await client.responses.batch(["Say hi"], model="gpt-4.1-mini"):
        texts.append(r.response.output_text if r.response is not None else None)
    for c in await client.chat.completions.batch(["Say hi"], model="gpt-4.1-mini"):
        texts.append(c.response.choices[0].message.content if c.response is not None else None)
    iterator: BatchIterator = client.chat.completions.batch_iter(["Say hi"], model="gpt-4.1-mini")
    async with iterator:
        async for item in iterator:
            texts.append(item.response.choices[0].message.content if item.response is not None else None)
    vectors = await client.wire(EMBEDDINGS).batch(["a"], model="text-embedding-3-small")
    return texts + [str(len(r.response.data)) for r in vectors if r.response is not None]

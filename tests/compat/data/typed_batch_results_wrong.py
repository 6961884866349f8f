"""Wrong uses of typed batch results: `mypy --strict` must report each line marked `# error`
(`tests/compat/test_batch_result_types_mypy.py` checks the line numbers)."""

from __future__ import annotations

from holysheep import Client
from holysheep._core.wire import EMBEDDINGS
from holysheep.batch import BatchResults
from holysheep.types.chat import ChatCompletion


def wrong(client: Client) -> None:
    results = client.responses.batch(["Say hi"], model="gpt-4.1-mini")
    for r in results:
        if r.response is not None:
            print(r.response.choices)  # error
        if r.tool_run is not None:
            print(r.tool_run.completions)  # error
    chat: BatchResults = results  # error
    replies: list[ChatCompletion] = results.responses  # error
    print(results[0].response.output_text)  # error
    print(client.chat.completions.batch(["x"], model="m")[0].response.output_text)  # error
    vectors = client.wire(EMBEDDINGS).batch(["a"], model="text-embedding-3-small")
    print(vectors[0].response.choices if vectors[0].response is not None else None)  # error
    print(vectors[0].tool_run.messages)  # error
    print(chat, replies)

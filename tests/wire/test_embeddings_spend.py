"""Embeddings items under a cost cap (#44): their format has no output, so nothing is reserved for one, and
their usage settles the cap (before the seam the cap read a completion's fields and every item failed)."""

from __future__ import annotations

from holysheep import Client
from holysheep._core.wire import EMBEDDINGS
from holysheep._engine.spend import output_token_bound
from holysheep.batch import estimate
from holysheep.testing import FakeServer

KEY = "sk-test-embeddings-spend-0123"


def test_embeddings_items_settle_at_their_usage_and_reserve_no_output() -> None:
    assert output_token_bound({"model": "m", "input": "x"}, EMBEDDINGS) == (0, True)
    with FakeServer(api_key=KEY) as server, Client(base_url=server.url, api_key=KEY) as client:
        results = client.chat.completions.batch([{"input": "hello"}, {"input": "world"}], model="m",
                                                max_cost_usd=1.0, prices={"m": (1.0, 2.0)}, check_quota=False)
    assert [r.ok for r in results] == [True, True]
    billed = sum(r.response.usage.prompt_tokens for r in results)  # type: ignore[union-attr]
    assert billed > 0 and results.summary().spent_usd == billed / 1e6
    est = estimate([{"input": "hello"}], model="m", prices={"m": (1.0, 2.0)}, tokenizer="chars/4")
    assert est.output_tokens_bound == 0

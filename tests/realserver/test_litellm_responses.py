"""Issue 44: the Responses API against a real server nobody here wrote that serves ``/v1/responses``: the LiteLLM
proxy with a ``mock_response`` deployment. ``responses.create`` (sync and async) and a batch; the same call
through the official openai client for comparison. (LiteLLM 1.108.7 answers a streamed ``/v1/responses`` on a
mock deployment with a 500 "Error processing stream start", openai's client too: streams are tested against the
test server and through the bridge.) Its replies carry ``null`` token counts, which the typed ``Response`` reads
as 0."""

from __future__ import annotations

import asyncio

import pytest

from holysheep import AsyncClient, Client

from .litellm_proxy import LiteLLMProxy, litellm_proxy

pytestmark = pytest.mark.realserver
__all__ = ["litellm_proxy"]

LITELLM_MODELS = {"mock": None}
TEXT = "hello from mock"


def test_responses_create_and_batch_match_openai(litellm_proxy: LiteLLMProxy) -> None:
    import openai

    with Client(api_key=litellm_proxy.key, base_url=litellm_proxy.url) as client:
        response = client.responses.create(model="mock", input="Say hello", instructions="Be brief.",
                                           max_output_tokens=20)
        assert response.output_text == TEXT and response.status == "completed"
        assert response.usage is not None and response.usage.input_tokens > 0 and response.usage.output_tokens > 0
        batch = client.responses.batch(["one", "two", "three"], model="mock", check_quota=False)
        assert [r.response.output_text for r in batch if r.response] == [TEXT] * 3
    reference = openai.OpenAI(api_key=litellm_proxy.key, base_url=litellm_proxy.url, max_retries=0)
    assert reference.responses.create(model="mock", input="Say hello").output_text == response.output_text


def test_async_responses_create(litellm_proxy: LiteLLMProxy) -> None:
    async def main() -> str:
        async with AsyncClient(api_key=litellm_proxy.key, base_url=litellm_proxy.url) as client:
            return (await client.responses.create(model="mock", input="Say hello")).output_text

    assert asyncio.run(main()) == TEXT

"""instructor on holysheep: ``from_openai`` in TOOLS and JSON modes, sync and async."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from .conftest import Stack, need

instructor = need("instructor")
pytestmark = pytest.mark.frameworks


class User(BaseModel):
    name: str
    age: int


MESSAGES = [{"role": "user", "content": "Extract: Jason is 25 years old."}]


@pytest.mark.parametrize("mode", ["TOOLS", "JSON"])
def test_from_openai(stack: Stack, mode: str) -> None:
    client = instructor.from_openai(stack.client.as_openai(), mode=getattr(instructor.Mode, mode))
    user = client.chat.completions.create(model="gpt-4.1", response_model=User, messages=MESSAGES)
    assert isinstance(user, User)
    assert stack.paths() == ["/v1/chat/completions"]
    assert stack.seen.calls == [("chat/completions", "success")]
    body = stack.server.requests[0].body
    if mode == "TOOLS":
        assert body["tools"][0]["function"]["name"] == "User"
    else:
        assert body["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("mode", ["TOOLS", "JSON"])
async def test_from_openai_async(stack: Stack, mode: str) -> None:
    async with stack.async_client() as hs:
        client = instructor.from_openai(hs.as_openai(), mode=getattr(instructor.Mode, mode))
        user = await client.chat.completions.create(model="gpt-4.1", response_model=User, messages=MESSAGES)
    assert isinstance(user, User)
    assert stack.paths() == ["/v1/chat/completions"]

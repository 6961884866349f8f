"""``parse(to=...)`` (openai-python's ``APIResponse.parse(to=SomeType)``) on ``with_raw_response`` and
``with_streaming_response``, sync httpx, async httpx and async aiohttp, against a server on 127.0.0.1: the same
values openai-python gives for the same server, pydantic validation with typed errors, and an unsupported type
refused (naming the supported ones) before the body is read."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Union

import httpx
import openai
import pytest
from pydantic import BaseModel

from holysheep import (
    APIResponseValidationError,
    AsyncStream,
    ChatCompletion,
    InvalidRequestError,
    ResponseConsumedError,
    Stream,
)

from .conftest import KEY, MESSAGES
from .hostile import HostileServer, Req, fixed, head
from .test_streaming_response import COMPLETION, aw, opened, run, streaming


class Mini(BaseModel):
    id: str
    model: str


class Wrong(BaseModel):
    missing: int


async def reply(req: Req, w: asyncio.StreamWriter) -> None:
    if req.headers.get("x-want") == "sse":
        body = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}\n\n'
        w.write(head(content_type="text/event-stream") + body + b"data: [DONE]\n\n")
        w.close()
        return
    if req.headers.get("x-want") == "latin1":
        w.write(fixed(200, "café".encode("latin-1"), content_type="text/plain; charset=iso-8859-1"))
        return
    w.write(fixed(200, COMPLETION, x_request_id="req-to"))


def openai_values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with HostileServer(reply) as srv, openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0) as oa:
        with oa.chat.completions.with_streaming_response.create(model="m", messages=MESSAGES) as response:
            out["str"], out["bytes"] = response.parse(to=str), response.parse(to=bytes)
            out["dict"] = response.parse(to=dict)
            r = response.parse(to=httpx.Response)
            out["response"] = (r.status_code, r.content, r.headers["x-request-id"])
        raw = oa.chat.completions.with_raw_response.create(model="m", messages=MESSAGES)
        out["raw_str"], out["raw_dict"] = raw.parse(to=str), raw.parse(to=dict)
    return out


def test_parse_to_matches_openai(kind: str) -> None:
    expected = openai_values()
    assert expected["bytes"] == COMPLETION and expected["dict"] == json.loads(COMPLETION)

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            assert await aw(response.parse(to=str)) == expected["str"]
            assert await aw(response.parse(to=bytes)) == expected["bytes"]
            as_dict = await aw(response.parse(to=dict))
            assert as_dict == expected["dict"] and await aw(response.parse(to=dict)) is as_dict  # once per type
            r = await aw(response.parse(to=httpx.Response))
            assert (r.status_code, r.content, r.headers["x-request-id"]) == expected["response"]
            assert r.json() == expected["dict"] and r.request.headers["authorization"] == "Bearer hs_...WXYZ"
            assert await aw(response.parse(to=object)) == expected["dict"]
            assert await aw(response.parse(to=dict[str, Any])) == expected["dict"]
            assert await aw(response.parse(to=Union[Mini, dict])) == Mini(id="chatcmpl-1", model="m")
            assert await aw(response.parse(to=Mini)) == Mini(id="chatcmpl-1", model="m")
            default = await aw(response.parse())
            assert isinstance(default, ChatCompletion) and default.request_id == "req-to"
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES))
        assert raw.parse(to=str) == expected["raw_str"] and raw.parse(to=dict) == expected["raw_dict"]
        assert raw.parse(to=bytes) == COMPLETION and raw.parse(to=Mini) == Mini(id="chatcmpl-1", model="m")
        assert raw.parse(to=httpx.Response).content == COMPLETION
        assert isinstance(raw.parse(), ChatCompletion)

    with HostileServer(reply) as srv:
        run(kind, srv.url, body)


def test_a_body_that_does_not_fit_is_a_typed_error(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            for to, why in [(list, "a JSON dict, not a list"), (int, "not a valid int"), (Wrong, "not a valid Wrong"),
                            (list[int], "not a valid")]:
                with pytest.raises(APIResponseValidationError, match=why) as info:
                    await aw(response.parse(to=to))
                assert info.value.status_code == 200 and info.value.request_id == "req-to"
            assert await aw(response.parse(to=bool)) is False  # openai's rule: the text is "true"
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES))
        with pytest.raises(APIResponseValidationError, match="not a valid Wrong"):
            raw.parse(to=Wrong)

    with HostileServer(reply) as srv:
        run(kind, srv.url, body)


def test_an_unsupported_type_is_refused_before_the_body_is_read(kind: str) -> None:
    class MyResponse(httpx.Response):
        pass

    async def body(client: Any, is_async: bool) -> None:
        async with opened(streaming(client), is_async) as response:
            for to in (set, 42, ChatCompletion.model_fields, MyResponse):
                with pytest.raises(InvalidRequestError) as info:
                    await aw(response.parse(to=to))
                assert info.value.field == "to"
            assert "str, bytes, int, float, bool, None, object, dict, list" in str(
                (await _refusal(response, set)).value)
            assert await aw(response.read()) == COMPLETION  # nothing was read by the refusals
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES))
        with pytest.raises(InvalidRequestError, match=r"httpx\.Response itself"):
            raw.parse(to=MyResponse)

    with HostileServer(reply) as srv:
        run(kind, srv.url, body)


async def _refusal(response: Any, to: Any) -> Any:
    with pytest.raises(InvalidRequestError) as info:
        await aw(response.parse(to=to))
    return info


def test_a_stream_parses_only_to_its_stream(kind: str) -> None:
    async def body(client: Any, is_async: bool) -> None:
        cls = AsyncStream if is_async else Stream
        kw: dict[str, Any] = {"stream": True, "extra_headers": {"x-want": "sse"}}
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES, **kw))
        stream = raw.parse()
        assert raw.parse(to=cls) is stream and raw.parse(to=cls[Any]) is stream
        with pytest.raises(InvalidRequestError, match="only be its stream class"):
            raw.parse(to=bytes)
        for read in (lambda: raw.content, lambda: raw.text, raw.read, raw.json):  # never an empty body
            with pytest.raises(ResponseConsumedError, match="events come from parse"):
                read()
        await aw(stream.close())
        async with opened(streaming(client, **kw), is_async) as response:
            with pytest.raises(InvalidRequestError, match="only be its stream class"):
                await aw(response.parse(to=dict))
            assert await aw(response.parse(to=cls)) is await aw(response.parse())

    with HostileServer(reply) as srv:
        run(kind, srv.url, body)


def test_text_follows_the_charset_as_in_openai(kind: str) -> None:
    latin1 = {"x-want": "latin1"}
    with HostileServer(reply) as srv, openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0) as oa:
        expected = oa.chat.completions.with_raw_response.create(model="m", messages=MESSAGES,
                                                                extra_headers=latin1).parse(to=str)
    assert expected == "café"

    async def body(client: Any, is_async: bool) -> None:
        raw = await aw(client.chat.completions.with_raw_response.create(model="m", messages=MESSAGES,
                                                                        extra_headers=latin1))
        assert raw.text == raw.parse(to=str) == expected
        async with opened(streaming(client, extra_headers=latin1), is_async) as response:
            assert await aw(response.parse(to=str)) == expected

    with HostileServer(reply) as srv:
        run(kind, srv.url, body)

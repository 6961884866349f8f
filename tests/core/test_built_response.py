"""`decoded_response`: a read response from a body decoded already, by the public constructors (issue 46: no
write to httpx's private ``_content``)."""

from __future__ import annotations

import gzip

import httpx
import pytest

from holysheep._core.built_response import decoded_response

BODY = b'{"error": {"message": "bad"}}'
SENT = [("content-type", "application/json"), ("content-encoding", "gzip"), ("content-length", "45"),
        ("set-cookie", "a=1"), ("set-cookie", "b=2")]


@pytest.mark.parametrize("name", ["httpx", "httpx2"])
def test_the_body_is_not_decoded_twice_and_the_headers_are_the_servers(name: str) -> None:
    module = pytest.importorskip(name)  # httpx2: in [dev] (not in the floors run)
    request = module.Request("POST", "https://api.example/v1/chat/completions")
    response = decoded_response(module.Response, 400, headers=SENT, content=BODY, request=request)
    assert type(response) is module.Response
    assert response.status_code == 400 and response.content == BODY and response.json() == {"error": {"message": "bad"}}
    assert sorted(response.headers.multi_items()) == sorted(SENT)
    assert response.headers["content-encoding"] == "gzip"  # as sent, though .content is the decoded body
    assert response.request is request and response.is_stream_consumed


def test_no_content_length_is_added_to_a_chunked_response() -> None:
    sent = [("transfer-encoding", "chunked"), ("content-type", "text/plain")]
    response = decoded_response(httpx.Response, 200, headers=sent, content=b"hello")
    assert response.headers.multi_items() == sent and response.text == "hello"


def test_a_mapping_and_extensions_are_taken() -> None:
    response = decoded_response(httpx.Response, 200, headers={"content-type": "text/plain"}, content=b"x",
                                extensions={"http_version": b"HTTP/2"})
    assert response.http_version == "HTTP/2" and response.headers.multi_items() == [("content-type", "text/plain")]


def test_a_gzipped_error_body_reaches_the_exception_decoded() -> None:
    """The SDK path: a gzipped 400 read by the httpx backend, then mapped to an error whose response is read."""
    import holysheep

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, headers={"content-encoding": "gzip", "content-type": "application/json"},
                              content=gzip.compress(BODY))

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with holysheep.Client(api_key="hs_" + "k" * 40, base_url="https://api.example/v1", http_client=http,
                          max_retries=0) as client, pytest.raises(holysheep.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert info.value.response.content == BODY
    assert info.value.response.headers["content-encoding"] == "gzip"

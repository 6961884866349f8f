"""pytest fixtures for testing code that calls HolySheep (registered as a ``pytest11`` plugin).

- ``holysheep_server``: a started `FakeServer`, stopped after the test.
  Configure it with ``@pytest.mark.holysheep_server(latency=0.05, faults=[...])``.
- ``holysheep_structured_server``: a started FakeServer that answers like a model following the request
  (`auto_reply`): a call of the request's first tool with schema-valid arguments, JSON valid for its
  ``response_format``, and a text answer after tool results.
- ``holysheep_script``: a factory, ``server = holysheep_script([...entries], **kwargs)``, that starts a
  FakeServer answering from a `Script` (a list of entries or a script file); stopped after the test.
- ``holysheep_mock``: a respx router that mocks ``https://api.holysheep.ai/v1`` (chat completions,
  models, quota) with canned OpenAI-format responses; its routes are named ``"chat"``, ``"models"``
  and ``"quota"``. Needs ``respx``; the test is skipped without it.

Importing this module is cheap: the server and respx load only when a fixture is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from ._server import FakeServer

__all__ = ["MOCK_API_KEY", "MOCK_BASE_URL", "holysheep_mock", "holysheep_script", "holysheep_server",
           "holysheep_structured_server"]

MOCK_BASE_URL = "https://api.holysheep.ai/v1"
MOCK_API_KEY = "hs_test_mockmockmockmockmockmock"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "holysheep_server(**kwargs): keyword arguments for the FakeServer of holysheep_server"
    )


@pytest.fixture
def holysheep_server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """A running FakeServer (``server.url``, ``server.api_key``, ``server.requests``), stopped afterwards."""
    from ._server import FakeServer

    marker = request.node.get_closest_marker("holysheep_server")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    with FakeServer(**kwargs) as server:
        yield server


@pytest.fixture
def holysheep_structured_server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """A running FakeServer with ``reply=auto_reply()``: tool calls with arguments valid for the tool's
    schema, JSON valid for ``response_format``; ``@pytest.mark.holysheep_server(...)`` adds options."""
    from ._script import auto_reply
    from ._server import FakeServer

    marker = request.node.get_closest_marker("holysheep_server")
    kwargs: dict[str, Any] = {"reply": auto_reply(), **(marker.kwargs if marker is not None else {})}
    with FakeServer(**kwargs) as server:
        yield server


@pytest.fixture
def holysheep_script() -> Iterator[Callable[..., FakeServer]]:
    """A factory: ``holysheep_script(entries_or_path, **FakeServer_kwargs)`` starts a FakeServer whose
    replies come from a `Script` (``structured=True`` answers what the script does not with `auto_reply`)."""
    from ._script import auto_reply, script_from
    from ._server import FakeServer

    started: list[FakeServer] = []

    def start(script: Any, *, structured: bool = False, **kwargs: Any) -> FakeServer:
        fallback = auto_reply() if structured else kwargs.pop("reply", "echo")
        server = FakeServer(reply=script_from(script, fallback=fallback), **kwargs).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def holysheep_mock() -> Iterator[Any]:
    """A ``respx`` router mocking the HolySheep API at ``https://api.holysheep.ai/v1``.

    ``POST /chat/completions`` echoes the last user message (as SSE when ``"stream": true``),
    ``GET /models`` and ``GET /quota`` return canned objects. Override a route with e.g.
    ``holysheep_mock["chat"].respond(429, json={...})``; check calls with ``holysheep_mock["chat"].calls``.
    """
    try:
        import httpx
        import respx
    except ImportError:  # pragma: no cover - depends on the environment
        pytest.skip("holysheep_mock needs respx: pip install respx (or the holysheep[dev] extra)")
    from ._replies import DEFAULT_MODELS, models_list, new_id, quota_object
    from ._responses import StreamReply, chat_endpoint

    def chat(request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content or b"null")
        except ValueError:
            body = None
        result, _ = chat_endpoint(body, "echo", models=DEFAULT_MODELS)
        headers = {"x-request-id": new_id("req_"), **result.headers}
        if isinstance(result, StreamReply):
            headers["content-type"] = "text/event-stream; charset=utf-8"
            return httpx.Response(200, headers=headers, content=b"".join(result.events))
        data, content_type = result.encode()
        return httpx.Response(result.status, headers={**headers, "content-type": content_type}, content=data)

    def canned(payload: dict[str, object]) -> httpx.Response:
        return httpx.Response(200, json=payload, headers={"x-request-id": new_id("req_")})

    with respx.mock(base_url=MOCK_BASE_URL, assert_all_called=False) as router:
        router.post("/chat/completions", name="chat").mock(side_effect=chat)
        router.get("/models", name="models").mock(side_effect=lambda _: canned(models_list(DEFAULT_MODELS)))
        router.get("/quota", name="quota").mock(side_effect=lambda _: canned(quota_object(10_000_000, 0)))
        yield router

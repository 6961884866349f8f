"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """Run a test once with the sync Client and once with the AsyncClient."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _respx_tests_use_httpx(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """respx mocks httpx only: in modules that use it, AsyncClient defaults to ``http_backend="httpx"``
    (the default transport is aiohttp; tests against FakeServer cover it)."""
    module = getattr(request, "module", None)
    if module is None or "respx" not in vars(module):
        return
    from holysheep import AsyncClient

    monkeypatch.setattr(AsyncClient, "_http_backends", ("httpx", "aiohttp"))  # the first is the default

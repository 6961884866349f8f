"""Fixtures shared by every test package."""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests press it with ``_thread.interrupt_main()``, which does nothing while SIGINT is ignored, as
    it is for a job started in the background (``pytest &``, nohup): they would wait forever. Restore Python's
    handler so they run the same in the foreground and the background."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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

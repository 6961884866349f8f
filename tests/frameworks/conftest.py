"""The frameworks group (``pytest -m frameworks``; ``.ci/run`` installs the frameworks into their own venv): each
framework gets ``as_openai()`` clients of a holysheep client pointed at the local test server, and each test checks
that the framework's requests reached the server through holysheep. No network but 127.0.0.1: the frameworks'
telemetry is switched off, and a connection anywhere else fails the test."""

from __future__ import annotations

import importlib
import ipaddress
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

import holysheep
from holysheep.hooks import Hooks
from holysheep.testing import FakeServer, auto_reply


def need(module: str) -> ModuleType:
    """The framework's module; skipped where it is not installed (the default run), but a missing one fails the
    group where ``.ci/run`` requires them all (``HOLYSHEEP_REQUIRE_FRAMEWORKS=1``)."""
    if os.environ.get("HOLYSHEEP_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


QUIET = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false",
         "DO_NOT_TRACK": "1", "OTEL_SDK_DISABLED": "true", "LOGFIRE_IGNORE_NO_CONFIG": "1"}


@pytest.fixture(autouse=True)
def local_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Telemetry off, and any connection to an address that is not loopback refused (a framework calling home)."""
    for name, value in QUIET.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(address: Any) -> None:
        if isinstance(address, tuple) and not ipaddress.ip_address(address[0]).is_loopback:
            raise AssertionError(f"a framework connected to {address[0]}: only 127.0.0.1 is allowed here")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


class Seen(Hooks):
    """What holysheep's hooks saw: each call's path and outcome."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_response(self, event: Any) -> None:
        self.calls.append((event.ctx.path, event.outcome))


@dataclass
class Stack:
    server: FakeServer
    client: holysheep.Client
    seen: Seen = field(default_factory=Seen)

    def async_client(self) -> holysheep.AsyncClient:
        """An `AsyncClient` on the same server with the same hook (close it: ``async with``)."""
        return holysheep.AsyncClient(api_key=self.server.api_key, base_url=self.server.url, hooks=[self.seen])

    def paths(self) -> list[str]:
        """The paths the server was asked for, after checking every request came from holysheep (its key and
        retry-count header; openai-python's own retry header absent)."""
        for request in self.server.requests:
            assert request.headers["authorization"] == f"Bearer {self.server.api_key}"
            assert "x-holysheep-retry-count" in request.headers
            assert "x-stainless-retry-count" not in request.headers
        return [request.path for request in self.server.requests]


@pytest.fixture
def stack() -> Iterator[Stack]:
    """A structured test server (tool calls, schema-valid JSON) and holysheep clients on it with a hook."""
    seen = Seen()
    with FakeServer(reply=auto_reply()) as server, \
            holysheep.Client(api_key=server.api_key, base_url=server.url, hooks=[seen]) as client:
        yield Stack(server, client, seen)

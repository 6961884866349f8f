"""openai-python's README and helpers.md snippets (`tests/compat/snippets.py`), each run with openai and with
holysheep against the same FakeServer, only the import lines changed: the printed output is the same."""

from __future__ import annotations

import contextlib
import gc
import io
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from holysheep.testing import FakeServer, Fault, ScriptedReply, auto_reply, refusal_reply

from .snippets import IMPORTS, SNIPPETS

_auto = auto_reply()


def _reply(body: dict[str, Any]) -> ScriptedReply:
    last = body["messages"][-1]
    text = last.get("content") if isinstance(last, dict) else None
    if isinstance(text, str) and "refuse" in text:
        return refusal_reply("I'm sorry, I can't help with that.")
    return _auto(body)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    models = ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4.1", "text-embedding-3-small"]
    with FakeServer(reply=_reply, models=models, strict_models=True) as s:
        yield s


def _run(package: str, name: str, server: FakeServer) -> str:
    if name == "retries":  # the first request meets a 429; with max_retries=5 the next one two more first
        server.set_faults([Fault.status(429, retry_after=0.01)] * 3 + [None])
    out = io.StringIO()
    namespace: dict[str, Any] = {"BASE_URL": server.url, "API_KEY": server.api_key, "__name__": f"snippet_{name}"}
    # openai's README never closes its module-level clients; dropped, either package's pooled httpx sockets
    # are closed by the garbage collector with a ResourceWarning (silent by default in Python). This test
    # compares output, so those are collected here, not in whichever later test the collector happens to run.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            with contextlib.redirect_stdout(out):
                code = compile(IMPORTS[package] + SNIPPETS[name], f"<{name}:{package}>", "exec", dont_inherit=True)
                exec(code, namespace)
        finally:
            server.set_faults(None)
            namespace.clear()
            gc.collect()
    return out.getvalue()


def test_there_are_at_least_fifteen_snippets() -> None:
    assert len(SNIPPETS) >= 15


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_prints_the_same_with_holysheep(name: str, server: FakeServer) -> None:
    before = len(server.requests)
    theirs = _run("openai", name, server)
    middle = len(server.requests)
    ours = _run("holysheep", name, server)
    assert ours == theirs
    assert theirs.strip()
    assert len(server.requests) - middle == middle - before  # the same requests (retries included)

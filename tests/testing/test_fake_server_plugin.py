"""The pytest fixtures, the lazy package, and the ``serve()`` command entry point."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from holysheep.testing import FakeServer, Fault
from holysheep.testing.pytest_plugin import MOCK_API_KEY, MOCK_BASE_URL

from .conftest import chat_body, client_for


def test_holysheep_server_fixture(holysheep_server: FakeServer) -> None:
    with client_for(holysheep_server) as c:
        assert (
            c.post("/chat/completions", json=chat_body("fixture")).json()["choices"][0]["message"]["content"]
            == "fixture"
        )
    assert len(holysheep_server.requests) == 1


@pytest.mark.holysheep_server(reply="configured", faults=[Fault.status(503)])
def test_holysheep_server_fixture_takes_marker_options(holysheep_server: FakeServer) -> None:
    with client_for(holysheep_server) as c:
        assert c.post("/chat/completions", json=chat_body()).status_code == 503
        assert (
            c.post("/chat/completions", json=chat_body()).json()["choices"][0]["message"]["content"]
            == "configured"
        )


def test_holysheep_mock_fixture(holysheep_mock) -> None:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {MOCK_API_KEY}"}
    with httpx.Client(base_url=MOCK_BASE_URL, headers=headers) as c:
        r = c.post("/chat/completions", json=chat_body("mocked"))
        assert r.status_code == 200 and r.headers["x-request-id"].startswith("req_")
        assert r.json()["choices"][0]["message"]["content"] == "mocked"
        r = c.post(
            "/chat/completions", json=chat_body("a b", stream=True, stream_options={"include_usage": True})
        )
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [e for e in r.text.split("\n\n") if e]
        assert events[-1] == "data: [DONE]"
        assert json.loads(events[-2].removeprefix("data: "))["usage"]["completion_tokens"] == 2
        assert c.get("/models").json()["object"] == "list"
        assert c.get("/quota").json()["object"] == "quota"
        assert c.post("/chat/completions", json={"model": "m"}).status_code == 400
        holysheep_mock["chat"].respond(
            429, json={"error": {"message": "slow down", "type": "rate_limit_exceeded"}}
        )
        assert c.post("/chat/completions", json=chat_body()).status_code == 429
    assert holysheep_mock["chat"].calls.last.response.status_code == 429
    assert holysheep_mock["models"].called


def test_plugin_and_package_import_lazily() -> None:
    code = (
        "import sys, holysheep.testing.pytest_plugin as p, holysheep.testing as t;"
        "print(sorted(m for m in ('respx', 'holysheep.testing._server', 'holysheep.testing._faults') "
        "if m in sys.modules)); t.FakeServer; print('holysheep.testing._server' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_server_modules_do_not_import_httpx_or_pydantic() -> None:
    # load the submodules under a stub parent package: holysheep/__init__ (the SDK) needs httpx itself
    code = (
        "import os, sys, types; pkg = types.ModuleType('holysheep');"
        "pkg.__path__ = [os.path.abspath('src/holysheep')]; sys.modules['holysheep'] = pkg;"
        "from holysheep.testing import _server, _faults, _http, _replies, _responses;"
        "print([m for m in sys.modules if m.split('.')[0] in ('httpx', 'pydantic')])"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, cwd=root
    )
    assert out.stdout.strip() == "[]"


def test_serve_prints_url_and_key_and_stops_on_sigint() -> None:
    code = "from holysheep.testing import serve; serve(port=0, latency_ms=20, fault_rate=0.0)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1) api key (hs_test_[A-Za-z0-9]{24})", line)
        assert match, line
        url, key = match.groups()
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=5) as c:
            assert (
                c.post("/chat/completions", json=chat_body("cli")).json()["choices"][0]["message"]["content"]
                == "cli"
            )
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_serve_stops_on_sigterm() -> None:
    code = "from holysheep.testing import serve; serve(port=0)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "api key" in proc.stdout.readline()
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()

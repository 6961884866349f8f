"""chat, models, quota, gpus, plan, batch wiring and mock-server, run as subprocesses."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from holysheep import Client
from holysheep.testing import FakeServer

from .conftest import CLI, Runner, assert_no_key, assert_one_line_error, clean_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> FakeServer:
    with FakeServer(strict_models=True) as s:
        yield s


def test_version_and_help(cli: Runner) -> None:
    from holysheep import __version__

    done = cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"holysheep {__version__}"
    done = cli()
    assert done.returncode == 2 and "bench" in done.stderr and "mock-server" in done.stderr


def test_chat_streams_reply_with_flags_after_subcommand(cli: Runner, server: FakeServer) -> None:
    done = cli("chat", "--base-url", server.url, "--api-key", server.api_key, "-m", "gpt-4.1",
               "--system", "be brief", "hello from the cli")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from the cli\n"
    body = server.requests[-1].body
    assert body["model"] == "gpt-4.1" and body["stream"] is True
    assert body["messages"][0] == {"role": "system", "content": "be brief"}


def test_chat_reads_stdin_and_env_json_no_stream(cli: Runner, server: FakeServer) -> None:
    env = clean_env(HOLYSHEEP_BASE_URL=server.url, HOLYSHEEP_API_KEY=server.api_key)
    done = cli("--json", "chat", "--no-stream", input="piped prompt\n", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"id", "model", "content", "finish_reason", "usage", "metrics"}
    assert data["content"] == "piped prompt" and data["finish_reason"] == "stop"
    assert data["usage"]["completion_tokens"] == 2
    assert "stream" not in server.requests[-1].body or server.requests[-1].body["stream"] is False
    assert_no_key(done.stdout + done.stderr, server.api_key)


def test_models_and_quota_json(cli: Runner, server: FakeServer) -> None:
    auth = ["--base-url", server.url, "--api-key", server.api_key, "--json"]
    done = cli(*auth, "models")
    assert done.returncode == 0, done.stderr
    models = json.loads(done.stdout)
    assert {m["id"] for m in models} == set(server.models)
    assert all(set(m) == {"id", "owned_by", "created", "input_per_m", "output_per_m"} for m in models)
    assert next(m for m in models if m["id"] == "deepseek-v3.2")["output_per_m"] == 0.42
    done = cli(*auth, "quota")
    assert done.returncode == 0, done.stderr
    quota = json.loads(done.stdout)
    assert {"remaining", "limit", "used", "unit"} <= set(quota) and quota["limit"] == 10_000_000
    assert_no_key(done.stdout + done.stderr, server.api_key)


def test_tables_are_plain_text_when_piped(cli: Runner, server: FakeServer) -> None:
    done = cli("--base-url", server.url, "--api-key", server.api_key, "models")
    assert done.returncode == 0
    assert done.stdout.splitlines()[0].split() == ["Model", "Owner", "$/M", "in", "$/M", "out"]
    assert "deepseek-v3.2" in done.stdout


@pytest.mark.parametrize(
    ("case", "code", "needle"),
    [
        ("bad key format", 2, "not a HolySheep key"),
        ("unknown model", 1, "does not exist"),
        ("wrong key", 1, "401"),
        ("unreachable host", 1, "Connection"),
        ("unknown flag", 2, "unrecognized arguments"),
        ("no prompt", 2, "no prompt"),
        ("bad plan model", 2, "unknown model"),
    ],
)
def test_user_errors_are_one_line(cli: Runner, server: FakeServer, unused_port: int, case: str, code: int,
                                  needle: str) -> None:
    key = server.api_key
    argv = {
        "bad key format": ["--api-key", "not-a-key-at-all", "models"],
        "unknown model": ["--base-url", server.url, "--api-key", key, "chat", "-m", "no-such-model", "hi"],
        "wrong key": ["--base-url", server.url, "--api-key", "hs_wrongwrongwrongwrong", "quota"],
        "unreachable host": ["--base-url", f"http://127.0.0.1:{unused_port}/v1", "--api-key", key, "chat", "hi"],
        "unknown flag": ["models", "--frobnicate"],
        "no prompt": ["--base-url", server.url, "--api-key", key, "chat"],
        "bad plan model": ["plan", "no-such-model-7b"],
    }[case]
    done = cli(*argv)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert_one_line_error(done.stderr)
    assert needle in done.stderr
    assert_no_key(done.stdout + done.stderr, key)
    assert_no_key(done.stdout + done.stderr, "hs_wrongwrongwrongwrong")


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_offline_gpus_and_plan_json(cli: Runner) -> None:
    done = cli("gpus", "--sort", "mem", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list) and len(rows) > 10
    done = cli("--json", "plan", "llama-3.1-70b", "--quant", "int4-awq", "--context", "8192", "--batch", "4",
               "--api-model", "deepseek-v3.2")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert {"memory", "options", "rejected", "api_comparison"} <= set(plan) and plan["options"]


def test_batch_is_mounted_and_takes_global_options(cli: Runner, server: FakeServer, tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    src, out = folder / "in.jsonl", folder / "out.jsonl"
    src.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "one"}]}\n'
                   '{"custom_id": "b", "messages": [{"role": "user", "content": "two"}]}\n')
    done = cli("--base-url", server.url, "--api-key", server.api_key, "batch", str(src), "-o", str(out),
               "--model", "deepseek-v3.2", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 2
    assert "Traceback" not in done.stderr


def test_batch_missing_module_is_a_one_line_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main

    monkeypatch.setitem(sys.modules, "holysheep.cli._batch", None)  # makes the import fail
    assert main(["batch", "in.jsonl", "-o", "out.jsonl"]) == 2
    assert_one_line_error(capsys.readouterr().err)


def test_mock_server_serves_until_ctrl_c() -> None:
    proc = subprocess.Popen([*CLI, "mock-server", "--port", "0", "--latency-ms", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        words = line.split()
        url, key = words[words.index("at") + 1], words[words.index("key") + 1]
        exports = [proc.stdout.readline().strip() for _ in range(3)][1:]  # the two lines the README quickstart uses
        assert exports == [f"export HOLYSHEEP_BASE_URL={url}", f"export HOLYSHEEP_API_KEY={key}"]
        with Client(base_url=url, api_key=key) as client:
            assert "deepseek-v3.2" in [m.id for m in client.models.list()]
    finally:
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err


def test_importing_holysheep_does_not_load_the_cli() -> None:
    code = ("import sys, httpx; before = {m for m in sys.modules if m.startswith('rich')}; import holysheep; "
            "after = {m for m in sys.modules if m.startswith('rich')}; "
            "print(any(m.startswith('holysheep.cli') for m in sys.modules), sorted(after - before))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["False", "[]"], done.stderr

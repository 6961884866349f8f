"""What a newcomer hits on the command line (issue 17): --timeout 0, 404 hints, --strict-models,
shared options after the sub-command, and the help's docs link."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from holysheep import Client, NotFoundError
from holysheep.testing import FakeServer

from .conftest import CLI, Runner, assert_one_line_error, clean_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> FakeServer:
    with FakeServer(strict_models=True) as s:
        yield s


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_chat_timeout_zero_is_a_usage_error_before_any_request(cli: Runner, server: FakeServer, value: str) -> None:
    before = len(server.requests)
    done = cli("chat", "--base-url", server.url, "--api-key", server.api_key, "--timeout", value, "hi")
    assert done.returncode == 2
    assert_one_line_error(done.stderr)
    assert "--timeout" in done.stderr and "must be > 0 seconds" in done.stderr
    assert len(server.requests) == before


def test_bench_timeout_zero_is_a_usage_error(cli: Runner, server: FakeServer) -> None:
    done = cli("bench", "--base-url", server.url, "--api-key", server.api_key, "--timeout", "0")
    assert done.returncode == 2 and "must be > 0 seconds" in done.stderr


def test_models_404_without_v1_suggests_v1_not_holysheep_models(cli: Runner, server: FakeServer) -> None:
    root = server.url.rsplit("/v1", 1)[0]
    done = cli("models", "--base-url", root, "--api-key", server.api_key)
    assert done.returncode == 1
    assert_one_line_error(done.stderr)
    assert f"did you mean {root}/v1?" in done.stderr
    assert "Run 'holysheep models'" not in done.stderr


def test_quota_404_says_no_quota_endpoint(cli: Runner) -> None:
    with FakeServer(quota_limit=None) as s:
        done = cli("quota", "--base-url", s.url, "--api-key", s.api_key)
    assert done.returncode == 1
    assert_one_line_error(done.stderr)
    assert "no quota endpoint" in done.stderr and "holysheep models" not in done.stderr


def test_chat_unknown_model_suggests_nearest(cli: Runner, server: FakeServer) -> None:
    done = cli("chat", "--base-url", server.url, "--api-key", server.api_key, "-m", "deepseek-v3.1", "hi")
    assert done.returncode == 1
    assert "Did you mean 'deepseek-v3.2'?" in done.stderr


def test_mock_server_strict_models() -> None:
    proc = subprocess.Popen([*CLI, "mock-server", "--port", "0", "--strict-models"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert proc.stdout is not None
        words = proc.stdout.readline().split()
        url, key = words[words.index("at") + 1], words[words.index("key") + 1]
        assert proc.stdout.readline().startswith("serving only: deepseek-v3.2, ")
        with Client(base_url=url, api_key=key, max_retries=0) as client:
            ok = client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "x"}])
            assert ok.choices[0].message.content == "x"
            with pytest.raises(NotFoundError) as info:
                client.chat.completions.create(model="gpt4.1", messages=[{"role": "user", "content": "x"}])
        assert info.value.status_code == 404
        assert "Served models: `deepseek-v3.2`" in str(info.value) and "`gpt-4.1`" in str(info.value)
        assert "Did you mean 'gpt-4.1'?" in str(info.value)
    finally:
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)  # a loaded 2-core CI box can take seconds to handle SIGINT
    assert proc.returncode == 0 and "Traceback" not in err


def test_mock_server_accepts_any_model_by_default() -> None:
    with FakeServer() as s, Client(base_url=s.url, api_key=s.api_key) as client:
        reply = client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "y"}])
    assert reply.choices[0].message.content == "y"




def _jsonl(path: object, n: int) -> None:
    import json
    from pathlib import Path

    Path(str(path)).write_text("".join(
        json.dumps({"custom_id": f"r{i}", "messages": [{"role": "user", "content": f"m{i}"}]}) + "\n"
        for i in range(n)))


@pytest.mark.parametrize("where", ["before", "after"])
def test_batch_takes_shared_options_before_or_after(cli: Runner, server: FakeServer, tmp_path: object,
                                                    where: str) -> None:
    from pathlib import Path

    src, out = Path(str(tmp_path)) / "in.jsonl", Path(str(tmp_path)) / "out.jsonl"
    _jsonl(src, 3)
    shared = ["--api-key", server.api_key, "--base-url", server.url, "--json"]
    own = ["batch", str(src), "-o", str(out), "--model", "gpt-4.1", "--no-progress"]
    done = cli(*(shared + own if where == "before" else own + shared))
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 3
    assert '"succeeded": 3' in done.stdout
    assert server.requests[-1].headers["authorization"] == f"Bearer {server.api_key}"


@pytest.mark.parametrize("command", [["models"], ["quota"], ["gpus"], ["plan", "llama-3.1-8b"]])
def test_shared_options_accepted_after_every_subcommand(cli: Runner, server: FakeServer, command: list[str]) -> None:
    done = cli(*command, "--api-key", server.api_key, "--base-url", server.url, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.lstrip()[:1] in "[{"


def test_top_level_help_links_the_docs_site(cli: Runner) -> None:
    import re
    from pathlib import Path

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    found = re.search(r'^Documentation = "([^"]+)"', pyproject, re.MULTILINE)
    assert found is not None
    url = found.group(1)
    done = cli("--help")
    assert done.returncode == 0
    assert done.stdout.rstrip().endswith(f"Docs: {url}")
    assert "docs/cli.md" not in done.stdout


@pytest.mark.parametrize("command", [["plan"], ["gpus"], ["mock-server"]])
def test_offline_commands_do_not_list_connection_options(cli: Runner, command: list[str]) -> None:
    done = cli(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert "--base-url" not in done.stdout and "--proxy" not in done.stdout
    if command != ["mock-server"]:  # mock-server's own --api-key is the key it accepts
        assert "--api-key" not in done.stdout


def test_networked_commands_list_proxy(cli: Runner) -> None:
    for command in ("chat", "models", "quota", "batch", "bench"):
        done = cli(command, "--help")
        assert "--proxy" in done.stdout, command

"""A key over plain http:// to a host that is not loopback: refused before any request, in the CLI's words
(``--allow-insecure-http``, never ``allow_insecure_http=True``), and sent when that flag is given.

The client is pointed at a test proxy on 127.0.0.1 that maps ``example.test`` to a FakeServer: whatever the
client sends is seen there, and nothing is resolved or sent beyond this machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from holysheep.cli import main
from holysheep.testing import FakeServer

from ..network._servers import Proxy
from .conftest import Runner, assert_one_line_error, clean_env

HOST = "example.test"
REFUSAL_END = "Use https://, or pass --allow-insecure-http if this network is trusted."


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def proxy(server: FakeServer) -> Iterator[Proxy]:
    with Proxy({HOST: ("127.0.0.1", server.port)}) as front:
        yield front


def test_batch_over_plain_http_exits_2_naming_the_flag_and_sends_nothing(
        cli: Runner, server: FakeServer, proxy: Proxy, jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    done = cli("batch", str(jsonl), "-o", str(out), "--base-url", f"http://{HOST}:{server.port}/v1",
               "--proxy", proxy.url, env=clean_env(HOLYSHEEP_API_KEY=server.api_key))
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done.stderr, "batch")
    assert done.stderr.startswith(f"holysheep batch: error: Refusing to send the API key over plain http:// to "
                                  f"'{HOST}'")
    assert done.stderr.rstrip("\n").endswith(REFUSAL_END) and "allow_insecure_http" not in done.stderr
    assert proxy.seen == [] and server.requests == []
    assert not out.exists()


COMMANDS = {
    "models": (["models"], ["/v1/models"]),
    "quota": (["quota"], ["/v1/quota"]),
    "chat": (["chat", "hi", "--no-stream"], ["/v1/chat/completions"]),
    "bench": (["bench", "-n", "1", "--no-progress"], ["/v1/chat/completions"]),
    "batch": (["batch", "{in}", "-o", "{out}", "--no-progress", "--no-quota-check"], ["/v1/chat/completions"]),
}


@pytest.mark.parametrize("where", ["after", "before"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_allow_insecure_http_sends_and_without_it_nothing_is_sent(
        command: str, where: str, server: FakeServer, proxy: Proxy, jsonl: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The flag after the command or before it (a global option) reaches the client; without it the command
    exits 2 with the one error line, and neither the proxy nor the server sees a request."""
    argv, paths = COMMANDS[command]
    argv = [a.replace("{in}", str(jsonl)).replace("{out}", str(tmp_path / "out.jsonl")) for a in argv]
    connection = ["--base-url", f"http://{HOST}:{server.port}/v1", "--proxy", proxy.url, "--api-key", server.api_key]
    assert main([*argv, *connection]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"holysheep {command}: error: Refusing") and err.endswith(REFUSAL_END + "\n"), err
    assert proxy.seen == [] and server.requests == []
    flagged = [*argv, *connection, "--allow-insecure-http"] if where == "after" else [
        "--allow-insecure-http", *argv, *connection]
    code = main(flagged)
    assert code == 0, capsys.readouterr().err
    assert [s.target for s in proxy.seen] == [f"http://{HOST}:{server.port}{path}" for path in paths]
    assert [r.path for r in server.requests] == paths


def test_ray_refuses_allow_insecure_http(jsonl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Ray front-end's replicas do not take the option yet: refused by name, not dropped."""
    code = main(["batch", str(jsonl), "-o", str(tmp_path / "out"), "--ray", "--allow-insecure-http"])
    assert code == 2
    assert capsys.readouterr().err == (
        "holysheep batch: error: --allow-insecure-http cannot be used with --ray yet (the Ray front-end does not "
        "honour it); run without --ray, or drop --allow-insecure-http.\n")

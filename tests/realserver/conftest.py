"""A real OpenAI-compatible server nobody here wrote: ``transformers serve`` on 127.0.0.1 with a tiny
random-weight Llama built at test time (marker ``realserver``; needs the ``validation`` extra)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

NEEDED = ("torch", "transformers", "tokenizers", "fastapi", "uvicorn", "openai")
START_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class RealServer:
    url: str  # base URL, ending in /v1
    model: str  # the folder the server is pinned to
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"transformers serve needs {', '.join(missing)}: pip install -e '.[validation]'")
    from ._tiny_model import build_tiny_llama

    folder = build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    port = _free_port()
    log = folder.parent / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "transformers.commands.transformers_cli", "serve", "--force_model", str(folder),
             "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32"],
            stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not answer within {START_TIMEOUT_S:g} s:\n"
                            f"{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield RealServer(url=url, model=str(folder), log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

"""A real OpenAI-compatible server nobody here wrote: ``transformers serve`` on 127.0.0.1 with a tiny
random-weight Llama built at test time (marker ``realserver``; needs the ``validation`` extra)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ._process import free_port, server_process

NEEDED = ("torch", "transformers", "tokenizers", "fastapi", "uvicorn", "openai")
START_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class RealServer:
    url: str  # base URL, ending in /v1
    model: str  # the folder the server is pinned to
    log: Path


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"transformers serve needs {', '.join(missing)}: pip install -e '.[validation]'")
    from ._tiny_model import build_tiny_llama

    folder = build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    port = free_port()
    log = folder.parent / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "transformers.commands.transformers_cli", "serve", "--force_model", str(folder),
               "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32"]
    with server_process("transformers serve", command, ready_url=f"{url}/models", log=log, env=env,
                        timeout_s=START_TIMEOUT_S):
        yield RealServer(url=url, model=str(folder), log=log)

"""A second real server nobody here wrote: the LiteLLM proxy on 127.0.0.1, with ``mock_response`` deployments
(no upstream) and per-deployment ``rpm`` limits (marker ``realserver``).

The proxy runs from its own virtual environment (its pins differ from ours): ``.ci/run`` makes one and sets
``HOLYSHEEP_LITELLM`` to its ``litellm`` command; without it, ``litellm`` on ``PATH`` is used, and without either
the tests that need it are skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ._process import free_port, server_process

START_TIMEOUT_S = 120.0
MASTER_KEY = "sk-holysheep-test-1234"  # LiteLLM's master keys start with sk-


@dataclass(frozen=True)
class LiteLLMProxy:
    url: str  # base URL, ending in /v1
    key: str
    log: Path


def _config(models: dict[str, int | None]) -> str:
    """A config with one mock deployment per model name (``rpm``: its requests-per-minute limit, or None)."""
    lines = ["model_list:"]
    for name, rpm in models.items():
        lines += [f"  - model_name: {name}", "    litellm_params:", f"      model: openai/{name}",
                  f"      mock_response: \"hello from {name}\""]
        if rpm is not None:
            lines.append(f"      rpm: {rpm}")
    lines += ["router_settings:", "  enable_pre_call_checks: true", "general_settings:",
              f"  master_key: {MASTER_KEY}", "litellm_settings:", "  telemetry: false", ""]
    return "\n".join(lines)


def litellm_command() -> str | None:
    found = os.environ.get("HOLYSHEEP_LITELLM") or shutil.which("litellm")
    return found if found and Path(found).exists() else None


@pytest.fixture(scope="module")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[LiteLLMProxy]:
    """One proxy per test module; the module names its deployments in ``LITELLM_MODELS`` (name -> rpm)."""
    command = litellm_command()
    if command is None:
        pytest.skip("the LiteLLM proxy is not installed: python3 -m venv .venv-litellm && "
                    ".venv-litellm/bin/pip install 'litellm[proxy]', then HOLYSHEEP_LITELLM=.venv-litellm/bin/litellm")
    folder = tmp_path_factory.mktemp("litellm")
    config = folder / "config.yaml"
    config.write_text(_config(getattr(request.module, "LITELLM_MODELS", {"mock": None})), encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "DISABLE_SCHEMA_UPDATE": "true", "NO_PROXY": "127.0.0.1,localhost"}
    with server_process("the LiteLLM proxy", [command, "--config", str(config), "--host", "127.0.0.1", "--port",
                                              str(port)], ready_url=f"{url}/health/liveliness",
                        log=folder / "proxy.log", env=env, timeout_s=START_TIMEOUT_S, cwd=folder):
        yield LiteLLMProxy(url=f"{url}/v1", key=MASTER_KEY, log=folder / "proxy.log")

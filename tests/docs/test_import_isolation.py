"""``import holysheep`` (and building a Client) stays light: no rich, no estimator, hardware, CLI, batch or
testing modules. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

from ._util import offline_env

LAZY = ("holysheep.estimator", "holysheep.hardware", "holysheep.accelerators", "holysheep.cli", "holysheep.batch",
        "holysheep._engine", "holysheep.testing", "holysheep.integrations")
HEAVY = ("rich", "aiohttp", "openai", "click", "pygments", "ray", "pyarrow", "opentelemetry", "httpx2", "httpcore2")

_PROBE = """
import json, sys
{pre}
before = set(sys.modules)
import holysheep
holysheep.Client(api_key="hs_" + "x" * 24)
print(json.dumps({{"before": sorted(before), "after": sorted(sys.modules)}}))
"""


def _probe(pre: str = "") -> tuple[set[str], set[str]]:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(pre=pre)], capture_output=True, text=True,
                         env=offline_env(), timeout=60, check=True)
    data = json.loads(out.stdout)
    return set(data["before"]), set(data["after"])


def _matching(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))


def test_lazy_subpackages_are_not_imported() -> None:
    _, after = _probe()
    assert _matching(after, LAZY) == []


def test_holysheep_itself_imports_no_heavy_optional_package() -> None:
    # httpx imports its own CLI (rich, click, pygments) when all three are installed; that is httpx's
    # cost, paid by openai-python too. Import the core dependencies first and look at what holysheep adds.
    before, after = _probe("import httpx, pydantic, typing_extensions")
    added = after - before
    assert _matching(added, HEAVY) == []
    assert _matching(added, LAZY) == []


def test_holysheep_works_with_rich_unimportable() -> None:
    """rich is only for the CLI: with it blocked, `import holysheep` and a Client still work, and nothing
    named rich is loaded (this fails if any module imported by `import holysheep` needs rich)."""
    _, after = _probe("import sys; sys.modules['rich'] = None  # makes `import rich` raise ImportError")
    assert "holysheep" in after and "holysheep._clients.client" in after
    assert [m for m in after if m.startswith("rich.")] == []


def test_building_an_async_client_does_not_import_aiohttp() -> None:
    """aiohttp is the default async transport but loads on first async use, not on construction."""
    code = ("import sys, httpx, pydantic; before = 'aiohttp' in sys.modules; import holysheep; "
            "holysheep.AsyncClient(api_key='hs_' + 'x' * 24); print(before, 'aiohttp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=offline_env(),
                         timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_building_a_sync_client_does_not_import_httpcore() -> None:
    """httpx loads httpcore when its first pool is built; the SDK builds its sync pool on the first request,
    so `import holysheep; Client()` pays for neither (part of the import-time budget)."""
    code = ("import sys, holysheep; holysheep.Client(api_key='hs_' + 'x' * 24); "
            "print('httpcore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=offline_env(),
                         timeout=60, check=True)
    assert out.stdout.split() == ["False"]

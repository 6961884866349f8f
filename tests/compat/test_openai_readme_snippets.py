"""openai-python's README snippets as data files (`data/snippets/*.py`: printing objects, the module-level client,
``NOT_GIVEN``/``omit``, aiohttp and httpx2 clients, logging, undocumented requests, ...), run as they are with
openai and with holysheep, only their import lines pointed at holysheep (#44). Both clients read the same local
FakeServer from the environment (``OPENAI_*`` and ``HOLYSHEEP_*``); the printed output is the same."""

from __future__ import annotations

import contextlib
import gc
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from holysheep._clients.module_client import close_module_client
from holysheep.testing import FakeServer, Fault, auto_reply

SNIPPETS = {path.stem: path for path in sorted((Path(__file__).parent / "data" / "snippets").glob("*.py"))}
FAULTS = {"logging_retries": [Fault.status(429, retry_after=0.01), Fault.status(503, retry_after=0.02), None]}


def holysheep_version(code: str) -> str:
    """The snippet with only its import lines changed: ``openai`` becomes ``holysheep``."""
    lines = []
    for line in code.splitlines():
        if line == "import openai":
            line = "import holysheep as openai"
        elif line.startswith("from openai ") or line.startswith("from openai."):
            line = re.sub(r"^from openai\b", "from holysheep", line)
        else:
            assert "import openai" not in line and not line.startswith("from openai"), line
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    models = ["gpt-4o", "gpt-4.1", "text-embedding-3-small"]
    with FakeServer(reply=auto_reply(), models=models, strict_models=True) as s:
        yield s


@pytest.fixture
def environment(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in (("API_KEY", server.api_key), ("BASE_URL", server.url)):
        monkeypatch.setenv(f"OPENAI_{name}", value)
        monkeypatch.setenv(f"HOLYSHEEP_{name}", value)
    yield
    openai._reset_client()
    close_module_client()


def _run(code: str, name: str, server: FakeServer) -> str:
    server.set_faults(FAULTS.get(name))
    out = io.StringIO()
    namespace: dict[str, Any] = {"__name__": f"snippet_{name}"}
    with warnings.catch_warnings():  # the README's unclosed clients: collected here (see test_openai_snippets)
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"<{name}>", "exec", dont_inherit=True), namespace)
        finally:
            server.set_faults(None)
            namespace.clear()
            gc.collect()
    return out.getvalue()


def test_only_import_lines_change() -> None:
    code = SNIPPETS["logging_retries"].read_text()
    ours = holysheep_version(code)
    changed = [(a, b) for a, b in zip(code.splitlines(), ours.splitlines(), strict=True) if a != b]
    assert changed == [("import openai", "import holysheep as openai"),
                       ("from openai import OpenAI", "from holysheep import OpenAI")]


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_readme_snippet_prints_the_same_with_holysheep(name: str, server: FakeServer) -> None:
    code = SNIPPETS[name].read_text()
    before = len(server.requests)
    theirs = _run(code, name, server)
    middle = len(server.requests)
    ours = _run(holysheep_version(code), name, server)
    assert ours == theirs
    assert theirs.strip()
    assert len(server.requests) - middle == middle - before  # the same requests (retries included)


COVERED_BY_SNIPPETS_PY = {  # tests/compat/snippets.py (chat-completions forms of the README's code)
    "Async usage": "async_create", "Streaming responses": "chat_stream", "Handling errors": "errors",
    "Retries": "retries", "Timeouts": "timeouts", "Accessing raw response data (e.g. headers)": "with_raw_response",
    "`.with_streaming_response`": "with_streaming_response", "Request IDs": "chat_create",
}


def _readme_sections_with_python() -> list[str]:
    import importlib.metadata

    text = importlib.metadata.metadata("openai").get_payload()  # type: ignore[attr-defined]
    assert isinstance(text, str) and "# OpenAI Python API library" in text
    sections, current = [], None
    for part in re.split(r"^(#{2,4} .+)$", text, flags=re.M):
        if re.match(r"^#{2,4} ", part):
            current = part.lstrip("#").strip()
        elif current and re.search(r"^```(python|py)\b", part, re.M):
            sections.append(current)
    return sections


def test_every_readme_section_with_python_is_run_or_listed_as_left_out() -> None:
    from .snippets import SNIPPETS as SNIPPETS_PY

    named = {m.group(1) for path in SNIPPETS.values()
             for m in re.finditer(r'"([^"]+)"', path.read_text().splitlines()[0])}
    assert set(COVERED_BY_SNIPPETS_PY.values()) <= set(SNIPPETS_PY)
    migrating = (Path(__file__).parents[2] / "docs" / "migrating.md").read_text(encoding="utf-8")
    table = migrating[migrating.index("| README / helpers.md snippet | Why |"):migrating.index("## Differences")]
    sections = _readme_sections_with_python()
    assert len(sections) >= 25
    missing = [s for s in sections if s not in named and s not in COVERED_BY_SNIPPETS_PY and s not in table]
    assert missing == []

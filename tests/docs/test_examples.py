"""Every example script and the notebook run offline (each starts its own FakeServer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ._util import EXAMPLES, ROOT, offline_env

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
EXPECTED = {"quickstart.py", "streaming.py", "async_batch.py", "jsonl_batch.py", "estimate_and_pick.py",
            "self_hosted_fallback.py", "extract_batch.py", "tool_batch.py"}


def test_every_listed_example_exists() -> None:
    assert set(SCRIPTS) >= EXPECTED
    assert (EXAMPLES / "notebooks" / "quickstart.ipynb").is_file()


RAY_SCRIPTS = {"ray_batch.py"}
"""Examples that start a local Ray cluster (11 s): run by the `ray` group of .ci/run, not the default pytest."""


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.ray) if s in RAY_SCRIPTS else s
                                    for s in SCRIPTS])
def test_example_runs_offline(script: str) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip(), f"{script} printed nothing"


TOOL_BATCH_OUTPUT = """\
[0] Paris: 64.4 F. (3 requests)
    turn 1: get_weather({"city":"Paris","unit":"c"}) -> 18 degrees C in Paris
    turn 2: to_fahrenheit({"celsius":18.0}) -> 64.4
[1] Tokyo vs Lima: 24.5 degrees C in Tokyo; 16 degrees C in Lima. (2 requests)
    turn 1: get_weather({"city":"Tokyo","unit":"c"}) -> 24.5 degrees C in Tokyo
    turn 1: get_weather({"city":"Lima","unit":"c"}) -> 16 degrees C in Lima
[2] failed: MaxTurnsError
    2 tool call(s) ran, 6 messages in the transcript
2/3 agents finished in 8 requests
"""


def test_tool_batch_example_prints_each_agent_and_its_tool_calls() -> None:
    """The batch of agents: the function tool and the function_tool ran with the scripted arguments, the
    two calls of one turn both ran, the third agent stopped at max_turns=3 alone, and 3 + 2 + 3 requests."""
    proc = subprocess.run([sys.executable, str(EXAMPLES / "tool_batch.py")], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == TOOL_BATCH_OUTPUT


def test_notebook_executes_headless(monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    for name in list(os.environ):
        if name.startswith(("HOLYSHEEP_", "OPENAI_")):
            monkeypatch.delenv(name)  # the kernel inherits this environment: run offline
    nb = nbformat.read(EXAMPLES / "notebooks" / "quickstart.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), \
        "commit the notebook without outputs"
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(EXAMPLES / "notebooks")}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(html) >= 2, "the estimate and the picker table should render as HTML"
    assert any("<table" in h for h in html)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "50/50 done, 0 failed" in text  # the sync batch ran inside the kernel's running loop

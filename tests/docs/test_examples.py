"""Every example script and the notebook run offline (each starts its own FakeServer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ._util import EXAMPLES, ROOT, offline_env

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
EXPECTED = {"quickstart.py", "streaming.py", "async_batch.py", "jsonl_batch.py", "estimate_and_pick.py",
            "self_hosted_fallback.py", "extract_batch.py"}


def test_every_listed_example_exists() -> None:
    assert set(SCRIPTS) >= EXPECTED
    assert (EXAMPLES / "notebooks" / "quickstart.ipynb").is_file()


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_offline(script: str) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip(), f"{script} printed nothing"


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

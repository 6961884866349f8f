"""Build the sdist and wheel, ``twine check`` them, install the wheel into a fresh venv and use it there.

Slow and needs PyPI for the build backend and the wheel's dependencies, so it runs only in CI or with
``HOLYSHEEP_PACKAGING_TEST=1``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from ._util import ROOT, offline_env

pytestmark = pytest.mark.skipif(
    not (os.environ.get("HOLYSHEEP_PACKAGING_TEST") == "1" or os.environ.get("CI")),
    reason="set HOLYSHEEP_PACKAGING_TEST=1 (or CI) to build, check and install the wheel",
)

DATA_FILES = (
    "holysheep/py.typed",
    "holysheep/accelerators/data/gpus.json",
    "holysheep/estimator/data/models.json",
    "holysheep/pricing/data/api_prices.json",
)


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=offline_env())
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])  # sdist, then the wheel from it
    return out


def test_twine_check(dist: Path) -> None:
    pytest.importorskip("twine")
    files = sorted(str(p) for p in dist.iterdir())
    assert any(f.endswith(".whl") for f in files) and any(f.endswith(".tar.gz") for f in files)
    proc = _run([sys.executable, "-m", "twine", "check", "--strict", *files])
    assert "PASSED" in proc.stdout


def test_wheel_contents_and_metadata(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for data in DATA_FILES:
            assert data in names, f"{data} missing from {wheel.name}"
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
        entry_points = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert not [n for n in names if n.startswith("tests/") or "/__pycache__/" in n]
    assert "Requires-Python: >=3.10" in meta
    for extra in ("cli", "aiohttp"):
        assert f"Provides-Extra: {extra}" in meta
    assert "Description-Content-Type: text/markdown" in meta
    assert "holysheep = holysheep.cli:main" in entry_points
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tf:
        snames = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for required in ("README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml", "tools/gen_docs.py",
                     *(f"src/{d}" for d in DATA_FILES)):
        assert required in snames, f"{required} missing from {sdist.name}"


def test_wheel_installs_and_runs_in_a_fresh_venv(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / "python")
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)])
    out = tmp_path / "out"
    out.mkdir()
    # Outside the checkout, so the installed package is used, not src/.
    _run([python, "-c", "from holysheep import Client; import holysheep, sys; "
          "assert 'site-packages' in holysheep.__file__, holysheep.__file__; "
          "assert not [m for m in sys.modules if m.split('.')[0] == 'rich' or m.startswith('holysheep.cli')]"],
         cwd=out)
    version = _run([str(bindir / "holysheep"), "--version"], cwd=out).stdout
    import holysheep

    assert holysheep.__version__ in version
    plan = _run([str(bindir / "holysheep"), "plan", "llama-3.1-8b"], cwd=out).stdout
    assert "Traceback" not in plan and plan.strip()
    _run([python, "-c", "from holysheep.hardware import gpu; from holysheep.pricing import price_for; "
          "from holysheep.estimator import list_models; "
          "assert gpu('H100') and price_for('gpt-4.1') and 'Llama-3.1-8B' in list_models()"], cwd=out)

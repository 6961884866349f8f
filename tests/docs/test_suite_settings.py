"""The test suite's own settings, as the README and .ci/run promise them: any warning fails the run, the
marked groups the default run leaves out are the ones .ci/run runs, and no test reads outside the
repository."""

from __future__ import annotations

import os
import re

import pytest

from ._util import ROOT

try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

PYTEST = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]


def test_any_warning_fails_the_run() -> None:
    filters = PYTEST["filterwarnings"]
    assert filters[0] == "error"
    # each ignore is narrow (a message and a category) and known; a new one is added here on purpose
    assert filters[1:] == [
        "ignore:coroutine 'connect_tcp.<locals>.try_connect' was never awaited:RuntimeWarning",
    ]


def test_the_groups_left_out_of_the_default_run_are_the_ones_ci_runs() -> None:
    declared = {line.split(":", 1)[0] for line in PYTEST["markers"]}
    left_out = set(re.findall(r"not (\w+)", PYTEST["addopts"]))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert left_out <= declared
    assert left_out == set(re.findall(r"^run_marked (\w+)", ci, re.M))
    assert ".venv/bin/python -m pytest\n" in ci  # the README's test command, as written
    assert ".venv/bin/python -m pytest\n" in (ROOT / "README.md").read_text(encoding="utf-8")
    # one install for the README's venv (every extra in one pip run); the others each in a venv of their own
    assert ci.count(".venv/bin/python -m pip install") == 1, "one install in .venv (every extra in one pip run)"
    for venv in (".venv-litellm", ".venv-frameworks", ".venv-matrix/py$version", ".venv-matrix/floors"):
        assert f"{venv}/bin/python -m pip install -q" in ci, venv
    assert '.venv-frameworks/bin/python -m pip install -q -e ".[dev,frameworks]"' in ci


def test_readme_starts_with_the_set_up_and_names_the_pypi_install() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.startswith("python3 -m venv .venv && .venv/bin/python -m pip install -e")
    assert "`pip install holysheep`" in readme  # outside the bash blocks: the README test runs those offline


SELF_REFERENCES = {"test_suite_settings.py", "test_doc_sources.py"}  # they name such paths to forbid them


def test_the_default_run_uses_one_worker_more_than_the_cores_when_xdist_is_there() -> None:
    from tests.conftest import DEFAULT_WORKERS

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(dep.startswith("pytest-xdist") for dep in dev["dev"])
    assert min((os.cpu_count() or 1) + 1, 8) == DEFAULT_WORKERS


def test_no_test_reads_outside_the_repository() -> None:
    outside = re.compile(r"parents\[\d\]\.parent|/work/shared|\.\./\.\./\.\.")
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
             if p.name not in SELF_REFERENCES and outside.search(p.read_text(encoding="utf-8"))]
    assert found == []

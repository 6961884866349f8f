"""Batch results are typed by the batch's format: a strictly typed user module (`data/typed_batch_results.py`) reads
``client.responses.batch(...)`` results as `Response` replies and `ResponseToolRunResult` runs, chat results as
`ChatCompletion`, ``client.wire(EMBEDDINGS).batch`` results as `CreateEmbeddingResponse`, with ``mypy --strict``: 0
errors. Wrong uses (``.choices`` on a Responses result, a Responses batch as a chat one) are errors
(`data/typed_batch_results_wrong.py`, each marked ``# error``). mypy takes a while: the ``typecheck`` group."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

pytestmark = pytest.mark.typecheck


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache),
                           "--config-file", os.devnull, str(path)], capture_output=True, text=True, env=env,
                          timeout=600)


def test_typed_batch_results_type_check(tmp_path: Path) -> None:
    done = _mypy(DATA / "typed_batch_results.py", tmp_path / "cache")
    assert done.stdout == "" and done.returncode == 0, done.stdout


def test_wrong_uses_of_batch_results_are_errors(tmp_path: Path) -> None:
    module = DATA / "typed_batch_results_wrong.py"
    marked = {i for i, line in enumerate(module.read_text().splitlines(), 1) if line.endswith("# error")}
    done = _mypy(module, tmp_path / "cache")
    errors = re.findall(r"^[^:]+:(\d+): error: (.*)$", done.stdout, re.MULTILINE)
    assert done.returncode == 1
    assert {int(line) for line, _ in errors} == marked and len(marked) == 8, done.stdout
    messages = "\n".join(message for _, message in errors)
    assert '"Response" has no attribute "choices"' in messages
    assert '"ResponseToolRunResult" has no attribute "completions"' in messages
    assert ('expression has type "BatchResults[Response, ResponseToolRunResult]", variable has type '
            '"BatchResults[ChatCompletion, ToolRunResult]"') in messages
    assert 'expression has type "list[Response]", variable has type "list[ChatCompletion]"' in messages
    assert '"CreateEmbeddingResponse" has no attribute "choices"' in messages
    assert '"None" has no attribute "messages"' in messages  # an embeddings batch has no tool runs

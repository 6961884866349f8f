"""Every docs block that comes from data is what `tools/gen_docs.py` writes from the data now (issue 40 item 2).

A stale block fails here with the diff; `python tools/gen_docs.py` rewrites it. The generator reads the data: a
new GPU row changes its blocks, and a hand-edited block is found and put back.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tools.docgen import BLOCKS, find_stale, regenerate, rewrite
from tools.docgen.engine import GeneratedBlockError
from tools.gen_docs import main

from ._util import ROOT


@pytest.fixture(scope="module")
def cache() -> dict[str, str]:
    """Each block's text from the packaged data, written once for the tests that do not change the data."""
    return {}


def test_the_docs_equal_the_generators_output(cache: dict[str, str]) -> None:
    stale = find_stale(ROOT, BLOCKS, cache)
    assert not stale, "stale generated blocks; run `python tools/gen_docs.py`:\n" + "".join(s.diff for s in stale)


def test_every_block_has_a_marker_on_some_page() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    assert {name for name in BLOCKS if f"<!-- generated: {name} -->" not in text} == set()


@pytest.fixture
def pages(tmp_path: Path, cache: dict[str, str]) -> Path:
    """A copy of README.md and docs/*.md to edit, its blocks fresh (so only the test above fails on stale docs)."""
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    for page in (ROOT / "docs").glob("*.md"):
        shutil.copy(page, tmp_path / "docs" / page.name)
    rewrite(tmp_path, BLOCKS, cache)
    return tmp_path


def test_a_new_gpu_row_changes_every_block_that_counts_or_lists_the_rows(pages: Path, tmp_path: Path,
                                                                        cache: dict[str, str]) -> None:
    from holysheep.hardware import gpus, register_gpus, reset_gpus

    rows = len(gpus())
    base = json.loads((ROOT / "src/holysheep/accelerators/data/gpus.json").read_text(encoding="utf-8"))["gpus"]
    new = {**next(g for g in base if g["id"] == "mi355x"), "id": "x999", "name": "X999 Test 512GB", "aliases": [],
           "dense_tflops": {"bf16": 9999.0}}
    (tmp_path / "extra.json").write_text(json.dumps({"gpus": [new]}), encoding="utf-8")
    assert find_stale(pages, BLOCKS, cache) == []
    kept = {"speed-validation-rows": cache["speed-validation-rows"]}  # 1 s; it only looks up the GPUs it names
    register_gpus(tmp_path / "extra.json")
    try:
        stale = {s.path: s for s in find_stale(pages, BLOCKS, kept)}
    finally:
        reset_gpus()
    assert set(stale) == {"README.md", "docs/hardware.md"}
    assert stale["README.md"].names == ("gpu-count",)
    # the plan excerpt counts the workable options not shown: one more
    assert set(stale["docs/hardware.md"].names) == {"gpu-count", "gpu-table", "plan-70b-awq"}
    diff = stale["docs/hardware.md"].diff
    assert f"+...  (one line per row, {rows + 1} in all)" in diff and f"-...  (one line per row, {rows} in all)" in diff
    assert "\n+x999  " in diff  # the fastest BF16 row heads the excerpt
    assert f"+<!-- generated: gpu-count -->{rows + 1}<!-- end generated --> rows:" in diff


def test_a_hand_edit_is_found_and_put_back(pages: Path, cache: dict[str, str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    page = pages / "docs" / "hardware.md"
    fresh = page.read_text(encoding="utf-8")
    page.write_text(fresh.replace("| gpt-4.1 | 2.00 |", "| gpt-4.1 | 2.50 |"), encoding="utf-8")
    assert main(["--check"], root=pages, cache=cache) == 1
    out, err = capsys.readouterr()
    assert "-| gpt-4.1 | 2.50 |" in out and "+| gpt-4.1 | 2.00 |" in out and out.count("\n+") == 2  # + the header
    assert "docs/hardware.md: stale api-prices" in err and "run `python tools/gen_docs.py`" in err
    assert main([], root=pages, cache=cache) == 0
    assert page.read_text(encoding="utf-8") == fresh
    assert main(["--check"], root=pages, cache=cache) == 0


def _fixed(text: str) -> dict[str, Callable[[], str]]:
    return {"x": lambda: text}


def test_inline_and_line_blocks_keep_their_shape() -> None:
    inline = "We have <!-- generated: x -->3<!-- end generated --> rows."
    assert regenerate(inline, _fixed("4")) == ("We have <!-- generated: x -->4<!-- end generated --> rows.", ["x"])
    lines = "a\n\n<!-- generated: x -->\n\n| old |\n\n<!-- end generated -->\n\nb\n"
    assert regenerate(lines, _fixed("| new |\n")) == (
        "a\n\n<!-- generated: x -->\n\n| new |\n\n<!-- end generated -->\n\nb\n", ["x"])
    assert regenerate(lines, _fixed("| old |")) == (lines, [])


@pytest.mark.parametrize(("text", "message"), [
    ("<!-- generated: y -->1<!-- end generated -->", "unknown generated block 'y'; known: x (tools/docgen/blocks.py)"),
    ("<!-- generated: x -->1\n\nno end", "has no `<!-- end generated -->` after it"),
])
def test_a_bad_marker_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(GeneratedBlockError, match=f"^docs/x.md: .*{re.escape(message)}$"):
        regenerate(text, _fixed("1"), "docs/x.md")


def test_a_registered_block_without_a_marker_exits_2(pages: Path, cache: dict[str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    page = pages / "README.md"
    page.write_text(page.read_text(encoding="utf-8").replace("<!-- generated: catalog-count -->", "", 1)
                    .replace("<!-- end generated --> catalog models", " catalog models", 1), encoding="utf-8")
    assert main(["--check"], root=pages, cache=cache) == 2
    assert "no page has a marker for the generated block(s) catalog-count" in capsys.readouterr().err


def test_a_new_retried_status_changes_every_page_that_lists_them(pages: Path, cache: dict[str, str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: a status added to the retry table alone used to leave the docs pages that list them stale."""
    from holysheep._core import retry

    kept = {k: v for k, v in cache.items() if k not in ("retried-4xx", "retried-4xx-codes")}
    assert find_stale(pages, BLOCKS, cache) == []
    monkeypatch.setattr(retry, "_RETRY_STATUSES", retry._RETRY_STATUSES | {425})
    stale = {s.path: s.names for s in find_stale(pages, BLOCKS, kept)}
    assert stale == {"README.md": ("retried-4xx-codes",), "docs/errors.md": ("retried-4xx",),
                     "docs/fallback.md": ("retried-4xx-codes",)}
    assert BLOCKS["retried-4xx"]() == "408 Request Timeout, 409 Conflict, 425 Too Early, 429 Too Many Requests"


def test_a_changed_client_default_changes_the_pages_that_quote_it(pages: Path, cache: dict[str, str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep._core.config import make_config

    assert make_config.__kwdefaults__ is not None
    monkeypatch.setitem(make_config.__kwdefaults__, "max_response_bytes", 32 * 2**20)
    monkeypatch.setitem(make_config.__kwdefaults__, "max_retry_after", 90.0)
    kept = {k: v for k, v in cache.items() if k not in ("default-max-response-bytes", "default-max-retry-after")}
    stale = {s.path: s for s in find_stale(pages, BLOCKS, kept)}
    assert {path: s.names for path, s in stale.items()} == {"docs/errors.md": ("default-max-retry-after",),
                                                           "docs/security.md": ("default-max-response-bytes",)}
    assert "+| Non-stream body" in stale["docs/security.md"].diff
    assert "max-response-bytes -->32 MiB<!--" in stale["docs/security.md"].diff
    assert "(default <!-- generated: default-max-retry-after -->90 s<!--" in stale["docs/errors.md"].diff

"""One flag table for the two `holysheep batch` front-ends: a flag the chosen front-end cannot honour is
refused with exit 2, naming it, before anything starts (nothing written, Ray not imported), never dropped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from holysheep.cli._batch import run_batch_command
from holysheep.cli._batch_flags import FLAG_SCOPES, LOCAL
from holysheep.cli._batch_parser import build_parser

# A value away from the default for each flag only the local runner honours.
LOCAL_VALUES = {
    "retry_window_s": ["--retry-window-s", "30"], "output_format": ["--output-format", "openai"],
    "require_quota": ["--require-quota"], "no_progress": ["--no-progress"], "json": ["--json"],
    "schema": ["--schema", "x.json"], "max_repairs": ["--max-repairs", "1"], "max_cost": ["--max-cost", "1"],
    "price": ["--price", "m=1,2"], "dry_run": ["--dry-run"], "cache": ["--cache", "c.db"],
    "cache_ttl": ["--cache-ttl", "5"], "cache_max_mb": ["--cache-max-mb", "5"],
    "rerun_changed": ["--resume", "--rerun-changed"], "no_quota_check": ["--no-quota-check"],
    "allow_insecure_http": ["--allow-insecure-http"], "outage_after_s": ["--outage-after-s", "5"],
    "outage_failure_ratio": ["--outage-failure-ratio", "0.5"], "max_pause_s": ["--max-pause-s", "5"],
}


def test_every_flag_is_in_the_table() -> None:
    dests = {a.dest for a in build_parser()._actions if a.dest not in ("help", "batch_defaults")}
    assert dests == set(FLAG_SCOPES), "add the new flag to FLAG_SCOPES (where it is honoured)"
    assert set(LOCAL_VALUES) == {d for d, (_, scope) in FLAG_SCOPES.items() if scope == LOCAL}


@pytest.mark.parametrize("dest", sorted(LOCAL_VALUES))
def test_ray_refuses_a_flag_it_cannot_honour(dest: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # importing Ray would fail: the refusal comes first
    source = tmp_path / "in.jsonl"
    source.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    args = build_parser().parse_args([str(source), "-o", str(tmp_path / "out"), "--ray", *LOCAL_VALUES[dest]])
    assert run_batch_command(args) == 2
    err = capsys.readouterr().err
    flag = FLAG_SCOPES[dest][0]
    assert err == (f"holysheep batch: error: {flag} cannot be used with --ray yet (the Ray front-end does not "
                   f"honour it); run without --ray, or drop {flag}.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_ray_refuses_a_proxy_given_before_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from holysheep.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)
    source = tmp_path / "in.jsonl"
    source.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    code = main(["--proxy", "http://127.0.0.1:9", "batch", str(source), "-o", str(tmp_path / "out"), "--ray"])
    assert code == 2
    assert capsys.readouterr().err == ("holysheep batch: error: --proxy cannot be used with --ray yet (the Ray "
                                       "front-end does not honour it); run without --ray, or drop --proxy.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_the_local_runner_refuses_replicas_without_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args([str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out"), "--replicas", "2"])
    assert run_batch_command(args) == 2
    assert capsys.readouterr().err == "holysheep batch: error: --replicas needs --ray.\n"
    assert list(tmp_path.iterdir()) == []


def test_defaults_and_shared_flags_pass_the_check(tmp_path: Path) -> None:
    from holysheep.cli._batch_flags import unhonoured_flags

    base = [str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out")]
    shared = ["--concurrency", "4", "--rpm", "60", "--max-tokens", "9", "--resume", "--model", "m"]
    assert unhonoured_flags(build_parser().parse_args([*base, "--ray", *shared])) == []
    assert unhonoured_flags(build_parser().parse_args([*base, *shared, "--json", "--output-format", "openai"])) == []
    assert unhonoured_flags(build_parser().parse_args([*base, "--ray", "--json", "--no-progress"])) == [
        "--no-progress", "--json"]


@pytest.mark.parametrize(("argv", "says"), [
    (["--max-tokens", "-3"], "argument --max-tokens: must be >= 1, got '-3'"),
    (["--max-tokens", "0"], "argument --max-tokens: must be >= 1, got '0'"),
    (["--concurrency", "0"], "argument --concurrency: must be >= 1, got '0'"),
    (["--max-retries", "-1"], "argument --max-retries: must be >= 0, got '-1'"),
    (["--max-repairs", "x"], "argument --max-repairs: expected a whole number, got 'x'"),
    (["--replicas", "0"], "argument --replicas: must be >= 1, got '0'"),
    (["--retry-window-s", "-5"], "argument --retry-window-s: must be a finite number >= 0, got '-5'"),
    (["--max-cost", "nan"], "argument --max-cost: must be a finite number >= 0, got 'nan'"),
    (["--cache-max-mb", "0"], "argument --cache-max-mb: must be a finite number > 0, got '0'"),
])
def test_an_invalid_value_exits_2_before_any_request(argv: list[str], says: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from holysheep.cli import main
    from holysheep.testing import FakeServer

    source = tmp_path / "in.jsonl"
    source.write_text('{"custom_id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    with FakeServer() as server:
        code = main(["batch", str(source), "-o", str(tmp_path / "out.jsonl"), "--base-url", server.url, *argv])
        assert server.requests == []
    assert code == 2
    assert says in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]

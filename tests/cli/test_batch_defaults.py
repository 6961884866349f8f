"""Every `holysheep batch` option that is also a Python API option has the Python API's default: the
parser reads the same constants as `BatchOptions` and `run_jsonl` (one source for each value)."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from holysheep._engine.options import DEFAULTS
from holysheep.batch import run_jsonl
from holysheep.cli._batch_parser import build_parser

ALIASES = {"max_cost": "max_cost_usd"}  # CLI dest -> Python name, where they differ


def _api_defaults() -> dict[str, Any]:
    params = inspect.signature(run_jsonl).parameters.values()
    signature = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    return {**DEFAULTS, **signature}


def _cli_defaults() -> dict[str, Any]:
    return {a.dest: a.default for a in build_parser()._actions
            if a.dest != "help" and a.default is not argparse.SUPPRESS}


def test_every_shared_option_has_the_python_default() -> None:
    api, cli = _api_defaults(), _cli_defaults()
    shared = {dest: ALIASES.get(dest, dest) for dest in cli if ALIASES.get(dest, dest) in api}
    # the options this test must at least see (a renamed dest would otherwise escape it)
    assert {"concurrency", "rpm", "tpm", "max_retries", "retry_window_s", "require_quota", "output_format",
            "resume", "overwrite", "model", "max_cost"} <= set(shared)
    wrong = {dest: (cli[dest], api[name]) for dest, name in shared.items() if cli[dest] != api[name]}
    assert wrong == {}, "CLI default != Python default (CLI, Python)"


def test_the_help_states_the_default_it_uses() -> None:
    text = build_parser().format_help()
    assert f"(default {DEFAULTS['concurrency']})" in text
    assert f"(default {DEFAULTS['retry_window_s']:g})" in text

"""The flag table of `holysheep batch`: where each flag is honoured, and the `run_jsonl` option it stands for
(read by the command, `holysheep.cli._batch`, and by the translation of library messages,
`holysheep.cli._words`); `unhonoured_flags` is the check of a run's flags against it."""

from __future__ import annotations

import argparse

__all__ = ["BOTH", "FLAG_SCOPES", "LOCAL", "PYTHON_NAMES", "RAY", "unhonoured_flags"]

# Where each flag of `holysheep batch` is honoured: by both front-ends, only the local runner (run_jsonl) or only
# the Ray front-end (--ray). A flag set away from its default on a front-end that does not honour it is refused
# before anything starts (exit 2, naming it), never dropped. A new flag is added here (a test checks that).
BOTH, LOCAL, RAY = "both", "local", "ray"
FLAG_SCOPES: dict[str, tuple[str, str]] = {
    "input": ("INPUT", BOTH), "output": ("-o/--output", BOTH), "model": ("--model", BOTH),
    "concurrency": ("--concurrency", BOTH), "rpm": ("--rpm", BOTH), "tpm": ("--tpm", BOTH),
    "max_tokens": ("--max-tokens", BOTH), "max_retries": ("--max-retries", BOTH), "resume": ("--resume", BOTH),
    "overwrite": ("--overwrite", BOTH), "base_url": ("--base-url", BOTH),
    "retry_window_s": ("--retry-window-s", LOCAL), "output_format": ("--output-format", LOCAL),
    "require_quota": ("--require-quota", LOCAL), "no_progress": ("--no-progress", LOCAL), "json": ("--json", LOCAL),
    "schema": ("--schema", LOCAL), "max_repairs": ("--max-repairs", LOCAL), "max_cost": ("--max-cost", LOCAL),
    "price": ("--price", LOCAL), "dry_run": ("--dry-run", LOCAL), "cache": ("--cache", LOCAL),
    "cache_ttl": ("--cache-ttl", LOCAL), "cache_max_mb": ("--cache-max-mb", LOCAL),
    "rerun_changed": ("--rerun-changed", LOCAL), "no_quota_check": ("--no-quota-check", LOCAL),
    "allow_insecure_http": ("--allow-insecure-http", LOCAL),  # the Ray replicas' clients do not take it yet
    "outage_after_s": ("--outage-after-s", LOCAL), "outage_failure_ratio": ("--outage-failure-ratio", LOCAL),
    "max_pause_s": ("--max-pause-s", LOCAL),
    "ray": ("--ray", RAY), "replicas": ("--replicas", RAY),
}
PYTHON_NAMES: dict[str, str] = {
    "output": "output_path", "no_quota_check": "check_quota=False", "price": "prices", "max_cost": "max_cost_usd",
}
"""The flags whose `run_jsonl` option is spelled otherwise (the rest share their name): how a library message
advising that option is rewritten to name the flag (`holysheep.cli._words`)."""


def unhonoured_flags(args: argparse.Namespace) -> list[str]:
    """The flags set (away from their defaults) that the chosen front-end (``--ray`` or not) cannot honour."""
    defaults: dict[str, object] = getattr(args, "batch_defaults", {})
    ray = getattr(args, "ray", False)
    other = LOCAL if ray else RAY
    flags = [flag for dest, (flag, scope) in FLAG_SCOPES.items()
             if scope == other and dest in defaults and getattr(args, dest, defaults[dest]) != defaults[dest]]
    if ray and getattr(args, "proxy", None):  # a connection flag given before the command: the replicas' clients
        flags.append("--proxy")               # read the proxy variables only
    return flags

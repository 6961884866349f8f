"""The connection flags of every networked command and of ``holysheep`` itself (before the command), defined
once: read by `holysheep.cli._common.add_connection_options`, the top-level parser (`holysheep.cli._app`), the
batch command's own parser and the translation of library messages (`holysheep.cli._words`)."""

from __future__ import annotations

from typing import Any

__all__ = ["CONNECTION_OPTIONS", "JSON_OPTION"]

CONNECTION_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--api-key", {"metavar": "KEY", "help": "API key (default: HOLYSHEEP_API_KEY); never printed"}),
    ("--base-url", {"metavar": "URL",
                    "help": "API base URL (default: HOLYSHEEP_BASE_URL or https://api.holysheep.ai/v1)"}),
    ("--proxy", {"metavar": "URL",
                 "help": "send requests through this proxy (default: HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, minus "
                         "NO_PROXY); credentials in it are never printed"}),
    ("--allow-insecure-http", {"action": "store_true",
                               "help": "allow sending the key over plain http:// to a host that is not loopback "
                                       "(a trusted network only)"}),
)
"""The options of every networked command (and of ``holysheep`` itself, before the command): one definition
of each flag and its help, read by `add_connection_options` and the top-level parser (`holysheep.cli._app`)."""
JSON_OPTION: tuple[str, dict[str, Any]] = (
    "--json", {"action": "store_true", "help": "machine-readable output on stdout"})

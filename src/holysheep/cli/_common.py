"""What every networked command shares: the client built from ``--api-key``/``--base-url``/environment."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from holysheep.cli._output import api_key_in_use

if TYPE_CHECKING:
    from holysheep import Client

__all__ = ["add_connection_options", "make_client", "number", "positive_seconds", "whole"]


def positive_seconds(text: str) -> float:
    """An argparse ``type`` for ``--timeout``: a number of seconds > 0 (0 would fail every request)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a number > 0), got {text!r}") from None
    if value <= 0 or math.isnan(value) or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text!r}: no request can finish in that time")
    return value


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """``--api-key``, ``--base-url``, ``--proxy`` and ``--json`` on a sub-command too (they override the global
    ones)."""
    parser.add_argument("--api-key", default=None, metavar="KEY",
                        help="API key (default: HOLYSHEEP_API_KEY); never printed")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="API base URL (default: HOLYSHEEP_BASE_URL or https://api.holysheep.ai/v1)")
    parser.add_argument("--proxy", default=None, metavar="URL",
                        help="send requests through this proxy (default: HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, "
                             "minus NO_PROXY); credentials in it are never printed")
    parser.add_argument("--json", action="store_true", default=None, help="machine-readable output on stdout")


def make_client(args: argparse.Namespace, **options: Any) -> Client:
    """A `holysheep.Client` for the parsed options; raises the SDK's errors for a bad key or URL."""
    from holysheep import Client

    api_key_in_use(args.api_key)
    return Client(api_key=args.api_key, base_url=args.base_url, proxy=getattr(args, "proxy", None), **options)


def whole(minimum: int, maximum: int | None = None) -> Any:
    """An argparse type: a whole number >= ``minimum`` (and <= ``maximum``), refused with exit 2 before anything
    is sent."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text!r}")
        return value
    return parse


def number(*, positive: bool) -> Any:
    """An argparse type: a finite number > 0 (``positive``) or >= 0."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 if positive else value >= 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>' if positive else '>='} 0, got {text!r}")
        return value
    return parse

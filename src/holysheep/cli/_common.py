"""What every networked command shares: the connection flags and the client built from them (``--api-key``,
``--base-url``, ``--proxy``, ``--allow-insecure-http``) and the environment."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from holysheep.cli._connection_flags import CONNECTION_OPTIONS, JSON_OPTION
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


def add_connection_options(parser: argparse.ArgumentParser, *, listed: bool = True) -> None:
    """`CONNECTION_OPTIONS` and ``--json`` on a sub-command (``holysheep batch ... --api-key K``: they override
    the global ones); a flag the sub-command already has wins (mock-server's ``--api-key``: the key it accepts).
    Not ``listed`` (offline commands): accepted, as scripts pass them everywhere, but not in the help."""
    taken = {opt for action in parser._actions for opt in action.option_strings}
    for flag, kwargs in (*CONNECTION_OPTIONS, JSON_OPTION):
        if flag not in taken:
            hidden = not listed and flag != JSON_OPTION[0]
            parser.add_argument(flag, default=None, **{**kwargs, **({"help": argparse.SUPPRESS} if hidden else {})})


def make_client(args: argparse.Namespace, **options: Any) -> Client:
    """A `holysheep.Client` for the parsed options; raises the SDK's errors for a bad key or URL."""
    from holysheep import Client

    api_key_in_use(args.api_key)
    return Client(api_key=args.api_key, base_url=args.base_url, proxy=getattr(args, "proxy", None),
                  allow_insecure_http=bool(getattr(args, "allow_insecure_http", False)), **options)


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
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


def number(*, positive: bool, at_most: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number > 0 (``positive``) or >= 0, and <= ``at_most`` when given."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 if positive else value >= 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>' if positive else '>='} 0, got {text!r}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"must be <= {at_most:g}, got {text!r}")
        return value
    return parse

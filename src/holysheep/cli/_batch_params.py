"""`holysheep batch`'s flags as `run_jsonl` parameters: structured output (``--schema``, ``--max-repairs``) and
spend (``--max-cost``, ``--price``, ``--cache*``), checked before anything is sent."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["close_cache", "spend_params", "structured_params"]


def structured_params(args: argparse.Namespace) -> dict[str, object]:
    schema, repairs = getattr(args, "schema", None), getattr(args, "max_repairs", None)
    if schema is None:
        if repairs is not None:
            from holysheep._exceptions import InvalidRequestError

            raise InvalidRequestError("--max-repairs needs --schema.", field="max_repairs")
        return {}
    from holysheep.batch._schema_arg import load_schema

    params: dict[str, object] = {"response_format": load_schema(schema)}
    if repairs is not None:
        params["max_repairs"] = repairs
    return params


def _prices(args: argparse.Namespace) -> dict[str, tuple[float, float]] | None:
    """``--price MODEL=IN,OUT`` flags as ``prices=``."""
    from holysheep._exceptions import InvalidRequestError

    prices: dict[str, tuple[float, float]] = {}
    for flag in getattr(args, "price", None) or []:
        model, _, rest = flag.rpartition("=")
        parts = rest.split(",")
        try:
            if not model or len(parts) != 2:
                raise ValueError
            prices[model] = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise InvalidRequestError(f"--price must be MODEL=IN,OUT in USD per million tokens (e.g. "
                                      f"--price my-model=0.5,1.5), got {flag!r}.", field="price") from None
    return prices or None


def spend_params(args: argparse.Namespace, *, cache: bool = True) -> dict[str, object]:
    """``--max-cost``, ``--price`` and ``--cache*`` as batch parameters (``cache=False``: the cache flags are
    checked but no file is opened)."""
    from holysheep._exceptions import InvalidRequestError

    params: dict[str, object] = {}
    if getattr(args, "max_cost", None) is not None:
        params["max_cost_usd"] = args.max_cost
    prices = _prices(args)
    if prices:
        params["prices"] = prices
    path = getattr(args, "cache", None)
    ttl, max_mb = getattr(args, "cache_ttl", None), getattr(args, "cache_max_mb", None)
    if path is None and (ttl is not None or max_mb is not None):
        raise InvalidRequestError("--cache-ttl and --cache-max-mb need --cache FILE.", field="cache")
    if max_mb is not None and not max_mb > 0:
        raise InvalidRequestError(f"--cache-max-mb must be a positive number, got {max_mb!r}.", field="cache")
    if path is not None and cache:
        from holysheep.cache import open_cache

        params["cache"] = open_cache(path, ttl_s=ttl, max_bytes=int(max_mb * 2**20) if max_mb else None)
    return params


def close_cache(params: dict[str, Any]) -> None:
    cache = params.get("cache")
    if cache is not None:
        cache.close()

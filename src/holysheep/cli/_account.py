"""``holysheep models`` and ``holysheep quota``: what the account can use."""

from __future__ import annotations

import argparse
from typing import Any

from holysheep.cli._common import add_connection_options, make_client
from holysheep.cli._output import EXIT_OK, print_json, print_table

__all__ = ["add_account_parsers", "run_catalog", "run_models", "run_quota"]


def add_account_parsers(sub: Any) -> None:
    """Register ``models`` and ``quota`` on the sub-parsers object."""
    p = sub.add_parser("models", help="list the models the API serves, with catalog prices",
                       description="List the served models (GET /models) with the catalog's USD per million "
                                   "input/output tokens where known. With --catalog, list the open models the "
                                   "memory estimator knows instead (offline, no key needed).")
    add_connection_options(p)
    p.add_argument("--catalog", action="store_true",
                   help="list the estimator's open-model catalog (offline): params, active params, context, quant")
    p.set_defaults(func=run_models)
    q = sub.add_parser("quota", help="show the account's remaining quota",
                       description="Show the account quota (GET /quota).")
    add_connection_options(q)
    q.set_defaults(func=run_quota)


def _price(model: str) -> tuple[float | None, float | None]:
    from holysheep.pricing import price_for

    try:
        entry = price_for(model)
    except Exception:
        return None, None
    return entry.input_per_m, entry.output_per_m


def _money(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return f"{v:,}" if isinstance(v, int | float) and not isinstance(v, bool) else str(v)


def run_catalog(args: argparse.Namespace) -> int:
    """``holysheep models --catalog [--json]``: the estimator's model catalog, offline."""
    from holysheep.estimator import catalog_entry, list_models

    rows: list[dict[str, Any]] = []
    for name in list_models():
        e = catalog_entry(name)
        a = e.architecture
        rows.append({"name": e.name, "family": e.family, "params": a.num_params,
                     "active_params": e.card_active_params, "active_convention": e.active_convention,
                     "active_params_all": a.num_active_params,
                     "context": a.max_position_embeddings, "quant": e.quant, "source": e.source, "as_of": e.as_of})
    if getattr(args, "json", False):
        print_json(rows)
    else:
        mark = {"all": "", "no_input_embedding": "*", "no_embeddings": "**"}
        print_table(["Model", "Family", "Params", "Active", "Context", "Quant"],
                    [[r["name"], r["family"], f"{r['params'] / 1e9:.2f}B",
                      f"{r['active_params'] / 1e9:.2f}B{mark[r['active_convention']]}",
                      f"{r['context']:,}", r["quant"]] for r in rows], right=[False, False, True, True, True, False])
        print("Active: counted as each model card does; * without the input embedding, ** without both "
              "embedding tables (--json: active_params_all counts everything a token uses)")
    return EXIT_OK


def run_models(args: argparse.Namespace) -> int:
    """``holysheep models [--json]``: a JSON array of ``{id, owned_by, created, input_per_m, output_per_m}``."""
    if getattr(args, "catalog", False):
        return run_catalog(args)
    with make_client(args) as client:
        models = client.models.list()
    rows: list[dict[str, Any]] = []
    for m in models:
        price_in, price_out = _price(m.id)
        rows.append({"id": m.id, "owned_by": m.owned_by, "created": m.created,
                     "input_per_m": price_in, "output_per_m": price_out})
    if args.json:
        print_json(rows)
    else:
        print_table(["Model", "Owner", "$/M in", "$/M out"],
                    [[r["id"], r["owned_by"] or "-", _money(r["input_per_m"]), _money(r["output_per_m"])]
                     for r in rows], right=[False, False, True, True])
    return EXIT_OK


def run_quota(args: argparse.Namespace) -> int:
    """``holysheep quota [--json]``: the quota object (``remaining``, ``limit``, ``used``, ``unit``, ...)."""
    with make_client(args) as client:
        quota = client.quota.retrieve()
    data: dict[str, object] = quota.model_dump()
    if args.json:
        print_json(data)
    else:
        print_table(["Field", "Value"], [[k, _value(v)] for k, v in data.items()], right=[False, True])
    return EXIT_OK

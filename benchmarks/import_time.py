"""Import time: a fresh ``python -c "import holysheep; holysheep.Client(...)"`` against openai-python.

Each run is a new interpreter (bytecode caches warm; one warm-up run per case is discarded), and the
cases alternate so that both see the same machine load. Two figures per case, medians over the runs:

- ``import_ms``: measured inside the child with ``time.perf_counter`` around the import and the client
  construction (interpreter start-up excluded). This is the headline figure and the ratio target
  (holysheep ≤ 0.35× openai).
- ``wall_ms``: the whole child process, start-up included.

``--profile`` adds ``python -X importtime`` for ``import holysheep``: the cumulative cost of each
holysheep module and of the third-party packages it pulls in.

    python benchmarks/import_time.py [--runs 21] [--profile] [--json out.json] [--python VENV/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

KEY = "hs_bench0123456789abcdefABCDEF"
TARGET = 0.35
PYTHON = sys.executable

_TIMED = (
    "import time; _t0 = time.perf_counter()\n"
    "{body}\n"
    "print((time.perf_counter() - _t0) * 1000.0)\n"
)

CASES: dict[str, str] = {
    "holysheep": f"import holysheep; holysheep.Client(api_key={KEY!r})",
    "openai": f"import openai; openai.OpenAI(api_key={KEY!r})",
    "python (empty)": "pass",
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOLYSHEEP_", "OPENAI_"))}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(body: str) -> tuple[float, float]:
    """(in-process import ms, whole-process wall ms) for one fresh interpreter."""
    start = time.perf_counter()
    out = subprocess.run([PYTHON, "-c", _TIMED.format(body=body)], capture_output=True, text=True,
                         env=_env(), check=True, timeout=60)
    wall = (time.perf_counter() - start) * 1000.0
    return float(out.stdout.strip().splitlines()[-1]), wall


def measure(runs: int = 21) -> dict[str, Any]:
    """Medians per case plus the holysheep/openai ratio. Returns a JSON-serialisable dict."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in CASES}
    for body in CASES.values():  # warm-up: bytecode caches, page cache
        run_once(body)
    for _ in range(runs):
        for name, body in CASES.items():
            samples[name].append(run_once(body))
    version = subprocess.run([PYTHON, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True, check=True).stdout.strip()
    result: dict[str, Any] = {"runs": runs, "python": version, "executable": PYTHON, "cases": {}}
    for name, values in samples.items():
        result["cases"][name] = {
            "import_ms": statistics.median(v[0] for v in values),
            "wall_ms": statistics.median(v[1] for v in values),
        }
    hs, oa = result["cases"]["holysheep"], result["cases"]["openai"]
    result["ratio_import"] = hs["import_ms"] / oa["import_ms"]
    result["ratio_wall"] = hs["wall_ms"] / oa["wall_ms"]
    result["target"] = TARGET
    result["meets_target"] = result["ratio_import"] <= TARGET
    return result


def profile(runs: int = 5) -> dict[str, list[tuple[str, int]]]:
    """Where ``import holysheep; Client(...)`` spends its time, from ``python -X importtime``.

    Returns ``{"holysheep": [(module, self µs)], "third_party": [(top-level package, summed self µs)]}``,
    costliest first, each figure the median over ``runs`` runs. Self time of a holysheep module includes
    building its pydantic models; a package's figure sums the self time of all its modules.
    """
    per_run: list[dict[str, int]] = []
    for _ in range(runs):
        out = subprocess.run([PYTHON, "-X", "importtime", "-c", CASES["holysheep"]],
                             capture_output=True, text=True, env=_env(), check=True, timeout=60)
        costs: dict[str, int] = {}
        for line in out.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _cum, name = line[len("import time:"):].split("|")
            name = name.strip()
            key = name if name.startswith("holysheep") else "pkg:" + name.split(".")[0]
            costs[key] = costs.get(key, 0) + int(self_us)
        per_run.append(costs)
    names = {k for costs in per_run for k in costs}
    medians = {k: int(statistics.median(c.get(k, 0) for c in per_run)) for k in names}
    ordered = sorted(medians.items(), key=lambda kv: kv[1], reverse=True)
    return {
        "holysheep": [(k, v) for k, v in ordered if not k.startswith("pkg:")],
        "third_party": [(k[4:], v) for k, v in ordered if k.startswith("pkg:")],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--profile", action="store_true", help="also print python -X importtime costs")
    parser.add_argument("--top", type=int, default=15, help="rows per profile table")
    parser.add_argument("--json", metavar="PATH", help="write the result as JSON")
    parser.add_argument("--python", metavar="EXE", help="interpreter to measure (default: this one), e.g. a "
                        "clean venv with only holysheep and openai installed")
    args = parser.parse_args(argv)
    global PYTHON
    if args.python:
        PYTHON = args.python

    result = measure(args.runs)
    print(f"Import + Client(), median of {result['runs']} fresh interpreters (Python {result['python']})")
    print(f"  {'case':<16} {'import ms':>10} {'wall ms':>10}")
    for name, case in result["cases"].items():
        print(f"  {name:<16} {case['import_ms']:>10.1f} {case['wall_ms']:>10.1f}")
    verdict = "meets" if result["meets_target"] else "MISSES"
    print(f"  holysheep / openai: {result['ratio_import']:.2f}x import, {result['ratio_wall']:.2f}x wall "
          f"({verdict} the {TARGET}x target on import)")
    if args.profile:
        prof = profile()
        result["profile"] = {group: dict(rows) for group, rows in prof.items()}
        for group, label in (("holysheep", "holysheep module"), ("third_party", "package (all its modules)")):
            rows = prof[group]
            print(f"\n{label:<44} {'self ms':>8}   (python -X importtime, median of 5; total "
                  f"{sum(v for _, v in rows) / 1000:.1f} ms)")
            for name, us in rows[: args.top]:
                print(f"  {name:<42} {us / 1000:>8.1f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

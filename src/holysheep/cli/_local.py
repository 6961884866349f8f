"""Commands that need no key: ``gpus`` and ``plan`` (offline hardware planning) and ``mock-server``."""

from __future__ import annotations

import argparse
from typing import Any

from ._output import EXIT_API, EXIT_OK, EXIT_USAGE, error, print_json

__all__ = ["add_local_parsers"]


def add_local_parsers(sub: Any) -> None:
    """Register ``plan``, ``gpus`` and ``mock-server`` on the sub-parsers object."""
    g = sub.add_parser("gpus", help="the accelerator table (offline)",
                       description="Print the accelerator table: dense bf16 TFLOPS, memory, bandwidth, price.")
    g.add_argument("--sort", default="bf16", choices=["bf16", "bw", "mem", "price"], help="sort key (default bf16)")
    g.add_argument("--json", action="store_true", default=None, help="a JSON array of rows")
    g.set_defaults(func=run_gpus)

    p = sub.add_parser("plan", help="memory, hardware options and API comparison for a model (offline)",
                       description="Estimate memory for serving (or fine-tuning) MODEL, rank hardware options, "
                                   "list rejected ones with reasons, and compare with an API model's price.")
    p.add_argument("model", help="model name from the estimator catalog, e.g. llama-3.1-70b")
    p.add_argument("--quant", default="bf16", help="weights format for inference, e.g. int4-awq, fp8 (default bf16)")
    p.add_argument("--context", type=int, default=2048, help="context length (seq_len when training)")
    p.add_argument("--batch", type=int, default=1, help="concurrent sequences (micro-batch when training)")
    p.add_argument("--kv-dtype", help="KV cache dtype (default: follows --quant)")
    p.add_argument("--train", action="store_true", help="plan a fine-tune instead of inference")
    p.add_argument("--method", default="full", choices=["full", "lora", "qlora"], help="fine-tune method")
    p.add_argument("--zero-stage", type=int, default=0, choices=[0, 1, 2, 3], help="DeepSpeed ZeRO stage")
    p.add_argument("--optimizer", help="training optimizer, e.g. adamw, adamw-8bit, sgd")
    p.add_argument("--precision", help="training precision: bf16-mixed, bf16-true, fp32")
    p.add_argument("--max-gpus", type=int, default=8, help="largest GPU count considered (default 8)")
    p.add_argument("--objective", default="cost", choices=["cost", "latency", "throughput"],
                   help="rank by $/M tokens (cost, default), batch-1 tok/s (latency) or total tok/s (throughput)")
    p.add_argument("--budget-per-hour", type=float, help="drop options above this USD/hour")
    p.add_argument("--gpus", nargs="+", metavar="GPU", help="only these GPUs")
    p.add_argument("--api-model", help="compare self-hosting with this API model's price")
    p.add_argument("--tokens-per-day", type=float, help="daily volume for the comparison (default 1e7)")
    p.add_argument("--utilization", type=float, default=0.5, help="self-hosted utilization (default 0.5)")
    p.add_argument("--input-fraction", type=float, help="share of tokens that are prompt tokens")
    p.add_argument("--top", type=int, default=5, help="options shown (default 5)")
    p.add_argument("--json", action="store_true", default=None, help="the plan as JSON")
    p.set_defaults(func=run_plan)

    m = sub.add_parser("mock-server", help="run a local OpenAI-compatible test server (no key, no network)",
                       description="Serve holysheep.testing.FakeServer in the foreground until Ctrl-C. It prints "
                                   "its base URL and the test key to use. Replies echo the last user message.")
    m.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    m.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    m.add_argument("--latency-ms", type=float, default=0.0, help="delay before the first byte/token")
    m.add_argument("--chunk-delay-ms", type=float, default=0.0, help="delay between streamed tokens")
    m.add_argument("--fault-rate", type=float, default=0.0, help="share of chat requests that fail (0..1)")
    m.add_argument("--seed", type=int, help="seed for the fault draw")
    m.add_argument("--api-key", dest="server_api_key", metavar="KEY", help="the key to accept (default: random)")
    m.add_argument("--strict-models", action="store_true",
                   help="answer unknown model names with a 404 listing the served models (default: accept any)")
    m.set_defaults(func=run_mock_server)


def run_gpus(args: argparse.Namespace) -> int:
    """``holysheep gpus``."""
    from ..hardware._cli import render_gpus_table

    print(render_gpus_table(sort=args.sort, as_json=bool(args.json)))
    return EXIT_OK


def run_plan(args: argparse.Namespace) -> int:
    """``holysheep plan MODEL``."""
    from ..hardware._cli import run_plan as plan

    train_options = {k: v for k, v in (("optimizer", args.optimizer), ("precision", args.precision)) if v}
    text, data = plan(
        args.model, quant=args.quant, context=args.context, batch=args.batch, kv_dtype=args.kv_dtype,
        train=args.train, method=args.method, zero_stage=args.zero_stage, train_options=train_options,
        max_gpus=args.max_gpus, objective=args.objective, budget_per_hour=args.budget_per_hour, gpus=args.gpus,
        api_model=args.api_model, tokens_per_day=args.tokens_per_day, utilization=args.utilization,
        input_fraction=args.input_fraction, top=args.top,
    )
    if args.json:
        print_json(data)
    else:
        print(text)
    return EXIT_OK


def run_mock_server(args: argparse.Namespace) -> int:
    """``holysheep mock-server``: blocks until Ctrl-C or SIGTERM."""
    from ..testing import serve

    if not 0 <= args.fault_rate <= 1:
        error(f"--fault-rate must be within 0..1, got {args.fault_rate}")
        return EXIT_USAGE
    try:
        serve(args.host, args.port, latency_ms=args.latency_ms, fault_rate=args.fault_rate,
              api_key=args.server_api_key, stream_chunk_delay_ms=args.chunk_delay_ms, seed=args.seed,
              strict_models=args.strict_models)
    except RuntimeError as exc:
        error(f"cannot serve on {args.host}:{args.port} ({exc.__cause__ or exc}); try another --port")
        return EXIT_API
    return EXIT_OK

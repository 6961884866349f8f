"""``holysheep bench``: streamed latency benchmark (TTFT, ITL, TPOT, e2e, tok/s, success, cost) per model."""

from __future__ import annotations

import argparse
import csv
import os
import queue
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from holysheep._core.wire import CHAT
from holysheep.cli._bench_stats import Sample, sample_fields, summarize, tpot
from holysheep.cli._common import add_connection_options, make_client, positive_seconds
from holysheep.cli._output import (
    EXIT_API,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    error,
    exit_code_for,
    message_for,
    print_json,
    print_table,
    scrub,
    warning,
)

if TYPE_CHECKING:
    from holysheep import Client
    from holysheep._engine.results import BatchStats

__all__ = ["DEFAULT_PROMPT", "add_bench_parser", "run_bench"]

DEFAULT_PROMPT = (
    "You are helping an engineering team choose an inference provider. Explain, in plain prose and without "
    "lists, how a large language model serving system turns an incoming chat request into streamed tokens. "
    "Cover request queueing, batching of many users' requests together, the prefill pass over the prompt, "
    "the key-value cache that stores attention state, the decode loop that produces one token at a time, and "
    "how streaming sends each token back to the client as soon as it exists. Then describe what time to "
    "first token and inter-token latency measure, why they differ, and which one matters most for an "
    "interactive chat application. Write about two hundred words."
)
"""The fixed benchmark prompt: about 150 input tokens (600 characters; ~130 with OpenAI's o200k tokenizer)."""

_FATAL = ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
          "UnprocessableEntityError", "InvalidRequestError", "InsecureTransportError", "InvalidAPIKeyError")


def add_bench_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``bench`` on the sub-parsers object."""
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="measure TTFT, ITL, total time, tok/s, success rate and cost per model",
        description="Stream N requests per model with a fixed ~150-token prompt and report latency "
                    "percentiles, throughput, success rate and catalog cost. Metrics: docs/cli.md.")
    p.add_argument("-m", "--model", action="append", dest="models", metavar="MODEL",
                   help="model to measure; repeat for several (default: deepseek-v3.2)")
    p.add_argument("-n", "--requests", type=int, default=20, help="requests per model (default 20)")
    p.add_argument("-c", "--concurrency", type=int, default=4, help="requests in flight (default 4)")
    p.add_argument("--max-tokens", type=int, default=200, help="max_tokens per request (default 200)")
    p.add_argument("--prompt", help="prompt text instead of the built-in ~150-token prompt")
    p.add_argument("--prompt-file", help="read the prompt from this file")
    p.add_argument("--timeout", type=positive_seconds, default=120.0, help="seconds per request (default 120)")
    p.add_argument("--max-retries", type=int, default=0,
                   help="SDK retries per request (default 0, so failures count against the success rate)")
    p.add_argument("--no-usage", action="store_true",
                   help="do not ask for stream usage (servers that reject stream_options); tokens = chunks")
    p.add_argument("--csv", metavar="PATH", help="write every per-request sample to this CSV file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_connection_options(p)
    p.set_defaults(func=run_bench)
    return p


def _prompt(args: argparse.Namespace) -> str:
    if args.prompt is not None and args.prompt_file is not None:
        raise ValueError("give --prompt or --prompt-file, not both")
    if args.prompt_file is not None:
        with open(args.prompt_file, encoding="utf-8") as f:
            return f.read()
    return str(args.prompt) if args.prompt is not None else DEFAULT_PROMPT


def _check(args: argparse.Namespace) -> str | None:
    if args.requests < 1:
        return f"-n/--requests must be at least 1, got {args.requests}"
    if args.concurrency < 1:
        return f"--concurrency must be at least 1, got {args.concurrency}"
    if args.max_tokens < 1:
        return f"--max-tokens must be at least 1, got {args.max_tokens}"
    if args.timeout <= 0 or args.max_retries < 0:
        return "--timeout must be positive and --max-retries at least 0"
    return None


def _measure(client: Client, model: str, index: int, params: dict[str, Any], t0: float,
             stop: threading.Event) -> tuple[Sample | None, BaseException | None]:
    """Run one streamed request; ``(None, None)`` when the bench stopped mid-way."""
    from holysheep.pricing import cost_of

    started = time.perf_counter()
    sample = Sample(model=model, index=index, ok=False, started_s=started - t0)
    try:
        stream = client.chat.completions.create(model=model, stream=True, **params)
        with stream:
            for _ in stream:
                if stop.is_set():
                    return None, None
        m = stream.metrics
        final = stream.get_final_completion()
    except Exception as exc:
        sample.e2e_s = time.perf_counter() - started
        sample.error_type = type(exc).__name__
        sample.status_code = getattr(exc, "status_code", None)
        sample.error = scrub(" ".join(str(exc).split()))[:300]
        return sample, exc if type(exc).__name__ in _FATAL else None
    usage = CHAT.usage(final)  # the chat format reads the reply's usage
    sample.ok = True
    sample.e2e_s = m.total_s if m.total_s is not None else time.perf_counter() - started
    sample.ttft_s, sample.itl_mean_s, sample.itl_p95_s = m.ttft_s, m.itl_mean_s, m.itl_p95_s
    sample.chunks = m.chunks
    sample.completion_tokens = m.completion_tokens
    sample.prompt_tokens = usage.input if usage is not None else None
    sample.tpot_s = tpot(sample.e2e_s, sample.ttft_s, sample.completion_tokens)
    sample.output_tok_s = m.tokens_per_s
    try:
        sample.cost_usd = cost_of(final, model=model) if usage is not None else None
    except Exception:
        sample.cost_usd = None
    return sample, None


class _Run:
    """One model's requests spread over ``concurrency`` daemon worker threads."""

    def __init__(self, client: Client, model: str, args: argparse.Namespace, params: dict[str, object],
                 stop: threading.Event) -> None:
        self.client, self.model, self.params, self.stop = client, model, params, stop
        self.jobs: queue.Queue[int] = queue.Queue()
        for i in range(args.requests):
            self.jobs.put(i)
        self.results: queue.Queue[tuple[Sample | None, BaseException | None]] = queue.Queue()
        self.workers = min(args.concurrency, args.requests)
        self.t0 = time.perf_counter()

    def _work(self) -> None:
        while not self.stop.is_set():
            try:
                index = self.jobs.get_nowait()
            except queue.Empty:
                return
            try:
                item = _measure(self.client, self.model, index, self.params, self.t0, self.stop)
            except BaseException as exc:  # never lose a job: the main thread counts results
                item = (None, exc)
            self.results.put(item)

    def start(self) -> None:
        self.t0 = time.perf_counter()
        for n in range(self.workers):
            threading.Thread(target=self._work, name=f"holysheep-bench-{n}", daemon=True).start()


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f}"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def render(summaries: Sequence[dict[str, Any]], out: IO[str] | None = None) -> None:
    """Print the blog-style table plus one line of errors per model that had any."""
    headers = ["Model", "OK", "TTFT p50 ms", "p95", "p99", "ITL mean ms", "p95", "Total p50 s", "p95",
               "tok/s/req", "tok/s all", "$/M in", "$/M out"]
    rows = []
    for s in summaries:
        price = s["price_per_m"]
        rows.append([
            s["model"], f"{s['succeeded']}/{s['requests']}",
            _ms(s["ttft_s"]["p50"]), _ms(s["ttft_s"]["p95"]), _ms(s["ttft_s"]["p99"]),
            _ms(s["itl_s"]["mean"]), _ms(s["itl_s"]["p95"]), _s(s["e2e_s"]["p50"]), _s(s["e2e_s"]["p95"]),
            _num(s["output_tok_s_per_request"]["p50"]), _num(s["output_throughput_tok_s"]),
            _num(price["input"], "{:.2f}"), _num(price["output"], "{:.2f}"),
        ])
    print_table(headers, rows, file=out)
    for s in summaries:
        if s["errors"]:
            errs = ", ".join(f"{k} x{v}" for k, v in s["errors"].items())
            rate = s["success_rate"] * 100 if s["success_rate"] is not None else 0.0
            print(f"{s['model']}: success {rate:.1f}%; errors: {errs}", file=out or sys.stdout)


def _prices(model: str) -> tuple[float | None, float | None]:
    from holysheep.pricing import price_for

    try:
        entry = price_for(model)
    except Exception:
        return None, None
    return entry.input_per_m, entry.output_per_m


def _write_csv(f: IO[str], samples: Sequence[Sample]) -> None:
    writer = csv.DictWriter(f, fieldnames=sample_fields())
    writer.writeheader()
    for s in samples:
        writer.writerow(s.to_dict())
    f.close()


def _progress_choice(args: argparse.Namespace) -> bool | str:
    """What ``make_progress`` is asked for: a rich bar on a terminal (unless ``HOLYSHEEP_PLAIN`` is set or rich
    is missing), plain lines otherwise, nothing with ``--no-progress``."""
    if args.no_progress:
        return False
    return True if sys.stderr.isatty() and not os.environ.get("HOLYSHEEP_PLAIN") else "plain"


def _count(stats: BatchStats, sample: Sample) -> None:
    """One finished request into the counters the progress display shows."""
    stats.done += 1
    stats.requests += 1
    if sample.ok:
        stats.succeeded += 1
    else:
        stats.failed += 1
    stats.add_tokens(sample.prompt_tokens or 0, sample.completion_tokens or 0)
    if sample.cost_usd is not None:
        stats.cost_usd += sample.cost_usd
        stats.cost_known = True


def _run_all(client: Client, models: Sequence[str], args: argparse.Namespace, params: dict[str, object],
             samples: list[Sample], summaries: list[dict[str, object]]) -> tuple[bool, BaseException | None]:
    """Measure each model in turn; returns ``(interrupted, fatal_error)``. Fills samples and summaries."""
    from holysheep._engine.progress import make_progress  # lazy: other commands do not load the batch layer
    from holysheep._engine.results import BatchStats

    stop = threading.Event()
    fatal: BaseException | None = None
    interrupted = False
    for model in models:
        price_in, price_out = _prices(model)  # also loads the catalog here, before the worker threads use it
        run = _Run(client, model, args, params, stop)
        mine: list[Sample] = []
        stats = BatchStats(total=args.requests)
        progress = make_progress(_progress_choice(args), label=f"bench {model}")
        if progress is not None:
            progress.start(stats)
        run.start()
        try:
            while len(mine) < args.requests and fatal is None:
                try:
                    sample, exc = run.results.get(timeout=0.1)
                except queue.Empty:
                    continue
                if sample is not None:
                    mine.append(sample)
                    _count(stats, sample)
                    if progress is not None:
                        progress.update(stats)
                if exc is not None:
                    fatal = exc
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if progress is not None:
                progress.close(stats)
        if interrupted or fatal is not None:
            stop.set()  # workers drop their in-flight streams; those requests are not counted
        samples.extend(mine)
        if mine:
            wall = max(s.started_s + (s.e2e_s or 0.0) for s in mine)
            summaries.append(summarize(model, mine, wall_s=wall, input_per_m=price_in, output_per_m=price_out))
        if interrupted or fatal is not None:
            break
    return interrupted, fatal


def run_bench(args: argparse.Namespace) -> int:
    """Run ``holysheep bench``; returns the exit status."""
    problem = _check(args)
    if problem:
        error(problem)
        return EXIT_USAGE
    with make_client(args, max_retries=args.max_retries, timeout=args.timeout) as client:  # closes its connections
        return _bench(client, args)


def _bench(client: Client, args: argparse.Namespace) -> int:
    try:
        prompt = _prompt(args)
        csv_file = open(args.csv, "w", newline="", encoding="utf-8") if args.csv else None  # noqa: SIM115
    except (OSError, ValueError) as exc:
        error(message_for(exc))
        return EXIT_USAGE
    models: list[str] = list(dict.fromkeys(args.models or ["deepseek-v3.2"]))
    params: dict[str, object] = {"messages": [{"role": "user", "content": prompt}], "max_tokens": args.max_tokens}
    if not args.no_usage:
        params["stream_options"] = {"include_usage": True}
    samples: list[Sample] = []
    summaries: list[dict[str, object]] = []
    interrupted, fatal = _run_all(client, models, args, params, samples, summaries)
    if csv_file is not None:
        _write_csv(csv_file, samples)
    if fatal is not None:
        error(message_for(fatal))
        return exit_code_for(fatal)
    if interrupted:
        warning(f"interrupted after {len(samples)} of {args.requests * len(models)} requests; "
                "results for those:")
    if args.json:
        config = {"models": models, "requests": args.requests, "concurrency": args.concurrency,
                  "max_tokens": args.max_tokens, "prompt_chars": len(prompt), "base_url": str(client.base_url)}
        print_json({"config": config, "interrupted": interrupted, "summary": summaries,
                    "samples": [s.to_dict() for s in samples]})
    elif summaries:
        render(summaries)
    if interrupted:
        return EXIT_INTERRUPTED
    dead = [s for s in summaries if not s["succeeded"]]
    for s in dead:
        first = next(x for x in samples if x.model == s["model"] and not x.ok)
        error(f"no request to {s['model']} succeeded ({first.error_type}: {first.error})")
    return EXIT_API if dead else EXIT_OK

"""Commands that need no key: ``gpus`` and ``plan`` (offline hardware planning) and ``mock-server``."""

from __future__ import annotations

import argparse
from typing import Any

from holysheep.cli._common import number, whole
from holysheep.cli._output import EXIT_API, EXIT_OK, EXIT_USAGE, error, print_json

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
    p.add_argument("model", help="model name from the estimator catalog (e.g. llama-3.1-70b) or a bare size (70b, 70)")
    p.add_argument("--quant", default=None,
                   help="weights format for inference, e.g. int4-awq, fp8 (default: the format the checkpoint "
                        "ships in, e.g. fp8 for DeepSeek-V3, mxfp4 for gpt-oss; bf16 otherwise)")
    p.add_argument("--context", "--seq-len", dest="context", type=_tokens, default=2048,
                   help="context length in tokens: 8192, 32k (= 32,768) or 1m (the training sequence length "
                        "with --train; default 2048)")
    p.add_argument("--batch", "--micro-batch", dest="batch", type=int, default=1,
                   help="concurrent sequences (the micro-batch with --train; default 1)")
    p.add_argument("--kv-dtype", help="KV cache dtype (default: follows --quant)")
    p.add_argument("--runtime", default="default", choices=["default", "vllm", "sglang", "hf", "llama.cpp", "mlx",
                                                            "tensorrt-llm", "lmdeploy"],
                   help="serving stack whose memory rules apply (default: generic, overheads counted); "
                        "tensorrt-llm also stands for NVIDIA NIM; lmdeploy is its TurboMind engine")
    p.add_argument("--vllm-version", metavar="VERSION",
                   help="with --runtime vllm: the release whose rules apply (default: v1, the V1 engine of 0.14 "
                        "and later; 0.8 for V1 before 0.14; v0, 0.4, 0.2.5 for older ones)")
    p.add_argument("--sglang-version", metavar="VERSION",
                   help="with --runtime sglang: the release (e.g. 0.4.3.post2: 0.4.0-0.4.3 run DeepSeek-class "
                        "FP8 MoE through Triton's fused MoE, slower per layer; default: current)")
    p.add_argument("--mlx-lm-version", metavar="VERSION",
                   help="with --runtime mlx: the mlx-lm release (e.g. 0.26.4: before 0.27 the logits of the "
                        "prompt's whole last step are counted; default: current)")
    p.add_argument("--transformers-version", metavar="VERSION",
                   help="with --runtime hf: the transformers version (e.g. 4.44: before 4.45 the whole prompt's "
                        "logits are counted; default: current)")
    p.add_argument("--prompt-tokens", type=_tokens, metavar="N",
                   help="the prompt's part of --context (the rest is generated): transformers runs it as one "
                        "forward pass (default: all of the context)")
    p.add_argument("--gpu-memory-utilization", type=float,
                   help="vLLM's gpu_memory_utilization, SGLang's mem_fraction_static, TensorRT-LLM's "
                        "free_gpu_memory_fraction or LMDeploy's cache_max_entry_count (default: the runtime's)")
    p.add_argument("--no-flash-attention", dest="flash_attention", action="store_false",
                   help="eager attention: count the attention scores (hf, default runtime, llama.cpp, training)")
    p.add_argument("--train", nargs="?", const="full", choices=["full", "lora", "qlora"],
                   help="plan a fine-tune instead of inference: full (default), lora or qlora")
    p.add_argument("--method", choices=["full", "lora", "qlora"], help=argparse.SUPPRESS)
    p.add_argument("--zero", "--zero-stage", dest="zero_stage", type=int, default=0, choices=[0, 1, 2, 3],
                   help="DeepSpeed ZeRO stage (default 0)")
    p.add_argument("--gradient-checkpointing", nargs="?", const="full", choices=["none", "selective", "full"],
                   help="activation recompute (alone: full)")
    p.add_argument("--offload-optimizer", action="store_true", default=None,
                   help="ZeRO-Offload: optimizer states in CPU memory (needs --zero 1-3)")
    p.add_argument("--offload-params", action="store_true", default=None,
                   help="ZeRO-Infinity: parameters in CPU memory (needs --zero 3)")
    p.add_argument("--lora-rank", type=int, help="LoRA/QLoRA adapter rank (default 16)")
    p.add_argument("--optimizer", help="training optimizer, e.g. adamw, adamw-8bit, paged-adamw, sgd")
    p.add_argument("--precision", help="training precision: bf16-mixed, bf16-true, fp32")
    p.add_argument("--max-gpus", type=int, default=8, help="largest GPU count considered (default 8)")
    p.add_argument("--objective", default="cost", choices=["cost", "cost_per_token", "latency", "throughput"],
                   help="rank by the lowest $/hour that meets the request (cost, default), $/M tokens "
                        "(cost_per_token), batch-1 tok/s (latency) or total tok/s (throughput)")
    p.add_argument("--budget-per-hour", type=float, help="drop options above this USD/hour")
    p.add_argument("--gpus", action="append", metavar="GPU[,GPU...]",
                   help="only these GPUs, comma-separated (--gpus H100,L40S): names or model numbers (4090 is "
                        "the RTX 4090), NxGPU for a count (4x4090)")
    p.add_argument("--expert-parallel", action="store_true", default=None,
                   help="MoE: experts whole on the GPUs (vLLM's --enable-expert-parallel) instead of the default "
                        "tensor-parallel slices")
    p.add_argument("--count", type=int, metavar="N",
                   help="exactly N GPUs (data-parallel when training) instead of powers of two up to --max-gpus")
    p.add_argument("--api-model", help="compare self-hosting with this API model's price")
    p.add_argument("--tokens-per-day", type=float, help="daily volume for the comparison (default 1e7)")
    p.add_argument("--utilization", type=float, default=0.5, help="self-hosted utilization (default 0.5)")
    p.add_argument("--input-fraction", type=float, help="share of tokens that are prompt tokens")
    p.add_argument("--top", type=int, default=5, help="options shown (default 5)")
    p.add_argument("--json", action="store_true", default=None, help="the plan as JSON")
    p.set_defaults(func=run_plan)

    m = sub.add_parser("mock-server", help="run a local OpenAI-compatible test server (no key, no network)",
                       description="Serve holysheep.testing.FakeServer in the foreground until Ctrl-C. It prints "
                                   "its base URL and the test key to use. It serves /v1/chat/completions, "
                                   "/v1/completions, /v1/responses, /v1/embeddings and /v1/models. Replies echo "
                                   "the last user message; --script and --structured script tool calls and "
                                   "schema-valid JSON.")
    m.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    m.add_argument("--port", type=whole(0, 65535), default=8765, help="port (default 8765; 0 picks a free one)")
    m.add_argument("--latency-ms", type=number(positive=False), default=0.0, help="delay before the first byte/token")
    m.add_argument("--chunk-delay-ms", type=number(positive=False), default=0.0, help="delay between streamed tokens")
    m.add_argument("--fault-rate", type=float, default=0.0, help="share of chat requests that fail (0..1)")
    m.add_argument("--seed", type=int, help="seed for the fault draw")
    m.add_argument("--api-key", dest="server_api_key", metavar="KEY", help="the key to accept (default: random)")
    m.add_argument("--strict-models", action="store_true",
                   help="answer unknown model names with a 404 listing the served models (default: accept any)")
    m.add_argument("--script", metavar="FILE",
                   help="replies from a JSON/JSONL script: entries matched by the last user message (turn by turn) "
                        "or taken in order (see docs/testing.md)")
    m.add_argument("--structured", action="store_true",
                   help="call the request's tools with schema-valid arguments and answer response_format with "
                        "JSON valid for its schema (json_object: for the schema written in the prompt, else {}), "
                        "also for requests the script does not answer")
    m.set_defaults(func=run_mock_server)


def run_gpus(args: argparse.Namespace) -> int:
    """``holysheep gpus``."""
    from holysheep.hardware._cli import render_gpus_table

    print(render_gpus_table(sort=args.sort, as_json=bool(args.json)))
    return EXIT_OK


def run_plan(args: argparse.Namespace) -> int:
    """``holysheep plan MODEL``."""
    from holysheep.estimator._vllm import DEFAULT_VLLM_VERSION
    from holysheep.hardware._cli import parse_gpus
    from holysheep.hardware._cli import run_plan as plan

    names, count = parse_gpus(args.gpus, args.count)
    train = None if args.train is None else (args.method or args.train)  # --train --method lora still works
    options = (("optimizer", args.optimizer), ("precision", args.precision),
               ("gradient_checkpointing", args.gradient_checkpointing), ("offload_optimizer", args.offload_optimizer),
               ("offload_params", args.offload_params), ("lora_rank", args.lora_rank))
    train_options: dict[str, object] = {k: v for k, v in options if v is not None}
    if not args.flash_attention:
        train_options["flash_attention"] = False
    if not train:
        given = sorted(k for k in train_options if k != "flash_attention") + (["method"] if args.method else [])
        if given or args.zero_stage:
            error(f"--{(given or ['zero'])[0].replace('_', '-')} applies to fine-tuning: add --train full|lora|qlora")
            return EXIT_USAGE
    if train and args.prompt_tokens is not None:
        error("--prompt-tokens applies to inference: drop it with --train (use --seq-len)")
        return EXIT_USAGE
    for flag, value, set_, runtime in (("--vllm-version", args.vllm_version, args.vllm_version is not None, "vllm"),
                                       ("--transformers-version", args.transformers_version,
                                        args.transformers_version is not None, "hf"),
                                       ("--sglang-version", args.sglang_version, args.sglang_version is not None,
                                        "sglang"),
                                       ("--mlx-lm-version", args.mlx_lm_version, args.mlx_lm_version is not None,
                                        "mlx")):
        if set_ and args.runtime != runtime:
            error(f"{flag} {value} applies to --runtime {runtime}: add --runtime {runtime}, or drop {flag}")
            return EXIT_USAGE
    text, data = plan(
        args.model, quant=args.quant, context=args.context, batch=args.batch, kv_dtype=args.kv_dtype,
        train=train or False, zero_stage=args.zero_stage, train_options=train_options,
        max_gpus=args.max_gpus, objective=args.objective, budget_per_hour=args.budget_per_hour, gpus=names,
        api_model=args.api_model, tokens_per_day=args.tokens_per_day, utilization=args.utilization,
        input_fraction=args.input_fraction, top=args.top, runtime=args.runtime,
        gpu_memory_utilization=args.gpu_memory_utilization, flash_attention=args.flash_attention, gpu_count=count,
        expert_parallel=bool(args.expert_parallel), vllm_version=args.vllm_version or DEFAULT_VLLM_VERSION,
        transformers_version=args.transformers_version, sglang_version=args.sglang_version,
        prompt_tokens=args.prompt_tokens, mlx_lm_version=args.mlx_lm_version,
    )
    if args.json:
        print_json(data)
    else:
        from holysheep.cli._words import cli_words

        print(cli_words(text, report=True))  # its hints in the CLI's words: `--zero 3`, not `zero_stage=3`
    return EXIT_OK


def _tokens(text: str) -> int:
    """argparse type for ``--context``: ``8192``, ``32k`` or ``1m``."""
    from holysheep._exceptions import InvalidRequestError
    from holysheep.hardware._cli import parse_tokens

    try:
        return parse_tokens(text)
    except InvalidRequestError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_mock_server(args: argparse.Namespace) -> int:
    """``holysheep mock-server``: blocks until Ctrl-C or SIGTERM."""
    from holysheep.testing import serve

    if not 0 <= args.fault_rate <= 1:
        error(f"--fault-rate must be within 0..1, got {args.fault_rate}")
        return EXIT_USAGE
    if args.script is not None:  # a bad script is a usage error, before the server starts
        from ..testing import Script

        try:
            Script.load(args.script)
        except (OSError, ValueError) as exc:
            error(f"--script: {exc}")
            return EXIT_USAGE
    from holysheep.cli._output import unscrubbed_std_streams

    try:
        with unscrubbed_std_streams():  # the test key it prints is the one to export: not a secret
            serve(args.host, args.port, latency_ms=args.latency_ms, fault_rate=args.fault_rate,
                  api_key=args.server_api_key, stream_chunk_delay_ms=args.chunk_delay_ms, seed=args.seed,
                  strict_models=args.strict_models, script=args.script, structured=args.structured)
    except RuntimeError as exc:
        error(f"cannot serve on {args.host}:{args.port} ({exc.__cause__ or exc}); try another --port")
        return EXIT_API
    return EXIT_OK

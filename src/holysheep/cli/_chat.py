"""``holysheep chat``: one prompt (argument or stdin) in, the reply streamed to the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, cast

from holysheep._core.wire import CHAT
from holysheep.cli._common import add_connection_options, make_client, positive_seconds
from holysheep.cli._output import EXIT_OK, EXIT_USAGE, error, print_json

if TYPE_CHECKING:
    from holysheep._clients.streaming import Stream
    from holysheep.types import ChatCompletionChunk, ChatCompletionMessageParam

__all__ = ["DEFAULT_MODEL", "add_chat_parser", "run_chat"]

DEFAULT_MODEL = "deepseek-v3.2"


def add_chat_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``chat`` on the sub-parsers object."""
    p: argparse.ArgumentParser = sub.add_parser(
        "chat", help="send one prompt and stream the reply",
        description="Send one prompt (the argument, or stdin when it is omitted or '-') and print the reply "
                    "as it streams. Works with any OpenAI-compatible server via --base-url.")
    p.add_argument("prompt", nargs="?", help="the user message; omitted or '-' reads stdin")
    p.add_argument("-m", "--model", default=DEFAULT_MODEL, help=f"model (default {DEFAULT_MODEL})")
    p.add_argument("--system", help="system message")
    p.add_argument("--no-stream", action="store_true", help="wait for the whole reply instead of streaming")
    p.add_argument("--max-tokens", type=int, help="max_tokens")
    p.add_argument("--temperature", type=float, help="sampling temperature")
    p.add_argument("--timeout", type=positive_seconds, default=600.0, help="seconds per attempt (default 600)")
    add_connection_options(p)
    p.set_defaults(func=run_chat)
    return p


def _read_prompt(args: argparse.Namespace) -> str | None:
    if args.prompt is not None and args.prompt != "-":
        return str(args.prompt)
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read().rstrip("\n")


def _as_json(completion: Any, metrics: object | None) -> dict[str, object]:
    texts, reasons = CHAT.output_texts(completion), CHAT.finish_reasons(completion)  # the format reads the reply
    usage = completion.usage
    return {
        "id": completion.id,
        "model": CHAT.model_of(completion),
        "content": texts[0] if texts else None,
        "finish_reason": reasons[0] if reasons else None,
        "usage": usage.model_dump() if usage is not None else None,
        "metrics": metrics.__dict__ if metrics is not None else None,
    }


def run_chat(args: argparse.Namespace) -> int:
    """Run ``holysheep chat``; returns the exit status."""
    prompt = _read_prompt(args)
    if not prompt or not prompt.strip():
        error("no prompt: pass it as an argument (holysheep chat \"hello\") or pipe it on stdin")
        return EXIT_USAGE
    messages: list[ChatCompletionMessageParam] = []
    if args.system:
        messages.append({"role": "system", "content": args.system})
    messages.append({"role": "user", "content": prompt})
    params: dict[str, Any] = {}
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        params["temperature"] = args.temperature
    client = make_client(args, timeout=args.timeout)
    with client:
        if args.no_stream:
            completion = client.chat.completions.create(model=args.model, messages=messages, **params)
            if args.json:
                print_json(_as_json(completion, None))
            else:
                texts = CHAT.output_texts(completion)
                print(texts[0] or "" if texts else "", flush=True)
            return EXIT_OK
        stream = cast("Stream[ChatCompletionChunk]",
                      client.chat.completions.create(model=args.model, messages=messages, stream=True, **params))
        with stream:
            wrote = False
            for chunk in stream:
                if args.json:
                    continue
                text = CHAT.delta_text(chunk)
                if text:
                    sys.stdout.write(text)
                    sys.stdout.flush()
                    wrote = True
            final = stream.get_final_completion()
            if args.json:
                print_json(_as_json(final, stream.metrics))
            elif wrote:
                sys.stdout.write("\n")
                sys.stdout.flush()
    return EXIT_OK

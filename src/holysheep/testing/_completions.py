"""FakeServer's legacy ``POST /v1/completions``: ``text_completion`` objects, plain and streamed.

The prompt is answered as a chat request with one user message (so ``"echo"``, scripts and
``auto_reply`` work unchanged); ``n`` choices per prompt, ``max_tokens`` truncates. Stdlib only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ._replies import ReplySpec, choice_count, dumps, new_id, resolve_reply, split_pieces, usage
from ._responses import Response, StreamReply, error_response, unknown_model

__all__ = ["completions_endpoint"]


def _prompts(body: Mapping[str, object]) -> list[str] | None:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    return None


def completions_endpoint(
    body: object, reply_spec: ReplySpec, *, models: Mapping[str, str], strict_models: bool = False,
    words_per_chunk: int = 1,
) -> tuple[Response | StreamReply, int]:
    """Answer ``POST /completions``: the response and the tokens it used (0 on error)."""
    if not isinstance(body, dict):
        return error_response(400, "We could not parse the JSON body of your request.", "invalid_request_error"), 0
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return error_response(400, "You must provide a model parameter.", "invalid_request_error", None, "model"), 0
    prompts = _prompts(body)
    if prompts is None:
        msg = "'prompt' must be a string or a non-empty array of strings."
        return error_response(400, msg, "invalid_request_error", None, "prompt"), 0
    if strict_models and model not in models:
        return unknown_model(model, models), 0
    n = choice_count(body)
    texts: list[tuple[str, str]] = []  # (text, finish reason) per choice, prompt-major as OpenAI orders them
    prompt_tokens = completion_tokens = 0
    for prompt in prompts:
        chat = {**body, "messages": [{"role": "user", "content": prompt}]}
        reply = resolve_reply(reply_spec, chat)
        counted = usage(chat, reply.content)
        prompt_tokens += counted["prompt_tokens"]
        completion_tokens += counted["completion_tokens"] * n
        texts.extend([(reply.content, reply.finish_reason)] * n)
    used = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}
    cid, created = new_id("cmpl-"), int(time.time())
    head = {"id": cid, "object": "text_completion", "created": created, "model": model,
            "system_fingerprint": "fp_holysheep_fake"}
    if body.get("stream") is not True:
        choices = [{"text": text, "index": i, "logprobs": None, "finish_reason": finish}
                   for i, (text, finish) in enumerate(texts)]
        return Response(200, {**head, "choices": choices, "usage": used}), used["total_tokens"]
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))

    def event(choices: list[dict[str, object]], usage_value: dict[str, int] | None = None) -> bytes:
        obj: dict[str, object] = {**head, "choices": choices}
        if include_usage:
            obj["usage"] = usage_value
        return b"data: " + dumps(obj) + b"\n\n"

    events: list[bytes] = []
    for i, (text, finish) in enumerate(texts):
        events.extend(event([{"text": piece, "index": i, "logprobs": None, "finish_reason": None}])
                      for piece in split_pieces(text, words_per_chunk))
        events.append(event([{"text": "", "index": i, "logprobs": None, "finish_reason": finish}]))
    content = len(events) - 1  # the last finish chunk goes out with the last content event
    if include_usage:
        events.append(event([], used))
    events.append(b"data: [DONE]\n\n")
    return StreamReply(events, content, first_content=0), used["total_tokens"]

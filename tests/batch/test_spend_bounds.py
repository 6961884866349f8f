"""docs/spend.md's worst case of one request, number for number: the prompt's JSON bytes, 2,048 tokens per
image, audio or file part, and ``max_tokens`` x ``n`` output tokens (4,096 when a request sets none)."""

from __future__ import annotations

import json

from holysheep._engine.spend import input_token_bound, output_token_bound

TEXT = {"role": "user", "content": "Describe this, é"}


def _bytes(messages: list[dict[str, object]]) -> int:
    return len(json.dumps({"messages": messages}, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def test_the_input_bound_is_the_prompt_json_bytes_plus_2048_per_non_text_part() -> None:
    assert input_token_bound({"messages": [TEXT], "model": "m", "temperature": 0.5}) == _bytes([TEXT])
    parts = [{"type": "text", "text": "Compare"},
             {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
             {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]
    with_media = [{"role": "user", "content": parts}]
    assert input_token_bound({"messages": with_media}) == _bytes(with_media) + 2 * 2048


def test_the_output_bound_is_max_tokens_times_n_else_4096() -> None:
    assert output_token_bound({"max_tokens": 300}) == (300, True)
    assert output_token_bound({"max_completion_tokens": 300, "n": 3}) == (900, True)
    assert output_token_bound({}) == (4096, False)
    assert output_token_bound({"n": 2}) == (8192, False)
